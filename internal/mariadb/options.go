package mariadb

import (
	"fmt"
	"regexp"
	"strings"
)

// reserved are the server options pristine sets itself for every server;
// a template may not change them.
var reserved = map[string]string{
	"datadir": "", "socket": "", "port": "", "bind-address": "", "pid-file": "", "log-error": "",
	"tmpdir": "", "user": "", "skip-networking": "", "skip-grant-tables": "", "init-file": "",
	"no-defaults": "", "defaults-file": "", "defaults-extra-file": "",
	"innodb-log-file-size": " (use --log-file-size)",
}

var optionKey = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)

// MergeOptions checks server options given as KEY=VALUE (or KEY, for a
// flag; underscores and dashes are the same) and returns base with each
// replaced or added, in a stable order: base's order, then new keys in the
// order given.
func MergeOptions(base []string, user []string) ([]string, error) {
	out := append([]string(nil), base...)
	index := map[string]int{}
	for i, o := range out {
		k, _, _ := strings.Cut(o, "=")
		index[k] = i
	}
	for _, o := range user {
		k, v, hasValue := strings.Cut(strings.TrimPrefix(o, "--"), "=")
		k = strings.ReplaceAll(strings.TrimSpace(k), "_", "-")
		if !optionKey.MatchString(k) {
			return nil, fmt.Errorf("server option %q: want KEY=VALUE, e.g. character-set-server=latin1", o)
		}
		if hint, ok := reserved[strings.TrimPrefix(k, "loose-")]; ok {
			return nil, fmt.Errorf("server option %q: pristine sets %s itself for every server%s", o, k, hint)
		}
		norm := k
		if hasValue {
			norm = k + "=" + v
		}
		if i, ok := index[k]; ok {
			out[i] = norm
			continue
		}
		index[k] = len(out)
		out = append(out, norm)
	}
	return out, nil
}
