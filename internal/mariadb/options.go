package mariadb

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/pristinedb/pristine/internal/errtag"
)

// reserved are the server options pristine sets itself for every server;
// a template may not change them.
var reserved = map[string]string{
	"datadir": "", "socket": "", "port": "", "bind-address": "", "pid-file": "", "log-error": "",
	"tmpdir": "", "user": "", "skip-networking": "", "skip-grant-tables": "", "init-file": "",
	"no-defaults": "", "defaults-file": "", "defaults-extra-file": "",
	"innodb-log-file-size": " (use --log-file-size)",
}

// TemplateOptions are the server options a template may carry (its
// meta.json's server_options, from `template build --server-option`, an
// archive, a pull or a fleet cache), each with why it is allowed: settings
// of how the server reads and stores the template's data, none of which
// loads code, names a file or directory, or touches TLS, logs, accounts or
// privileges. Both flavours spell them the same. Every other option is
// refused wherever a template's options are taken (CheckTemplateOptions).
var TemplateOptions = map[string]string{
	"character-set-server":            "the default character set of new databases and tables",
	"collation-server":                "the default collation of new databases and tables",
	"character-set-client-handshake":  "whether the client's character set is honoured (skip- to ignore it)",
	"sql-mode":                        "the SQL dialect and its strictness",
	"lower-case-table-names":          "how table names are stored and compared (must match the data)",
	"default-time-zone":               "the time zone of TIMESTAMP values and NOW()",
	"explicit-defaults-for-timestamp": "the defaults of TIMESTAMP columns",
	"default-storage-engine":          "the engine of a CREATE TABLE that names none",
	"default-tmp-storage-engine":      "the engine of a CREATE TEMPORARY TABLE that names none",
	"innodb-page-size":                "the InnoDB page size the data directory was made with",
	"innodb-default-row-format":       "the row format of new InnoDB tables",
	"innodb-compression-default":      "whether new InnoDB tables are page compressed (MariaDB)",
	"innodb-compression-algorithm":    "the algorithm of InnoDB page compression (MariaDB)",
	"innodb-compression-level":        "the zlib level of InnoDB page compression (MariaDB)",
	"innodb-strict-mode":              "whether InnoDB refuses invalid table options",
	"innodb-autoinc-lock-mode":        "how AUTO_INCREMENT values are handed out",
	"innodb-ft-min-token-size":        "the shortest word an InnoDB FULLTEXT index keeps",
	"innodb-ft-max-token-size":        "the longest word an InnoDB FULLTEXT index keeps",
	"ft-min-word-len":                 "the shortest word a MyISAM FULLTEXT index keeps",
	"ft-max-word-len":                 "the longest word a MyISAM FULLTEXT index keeps",
	"ngram-token-size":                "the token size of MySQL's ngram FULLTEXT parser",
	"auto-increment-increment":        "the step between AUTO_INCREMENT values",
	"auto-increment-offset":           "the first AUTO_INCREMENT value",
	"transaction-isolation":           "the default transaction isolation level",
	"event-scheduler":                 "whether the template's events run",
	"group-concat-max-len":            "the longest GROUP_CONCAT() result",
	"max-allowed-packet":              "the largest statement or row a client may send",
	"max-sp-recursion-depth":          "how deep a stored procedure may recurse",
	"div-precision-increment":         "the scale of a division's result",
	"default-week-format":             "the default mode of WEEK()",
	"lc-time-names":                   "the language of day and month names",
	"optimizer-switch":                "the optimizer's flags (query plans only)",
}

// optionPrefixes are the prefixes the server accepts before an option's
// name: loose- (ignore it if unknown), maximum- (the ceiling SET may
// reach), and skip-, disable-, enable- (a boolean's value).
var optionPrefixes = []string{"loose-", "maximum-", "skip-", "disable-", "enable-"}

// ErrServerOption is matched by the error about a server option a
// template may not carry.
var ErrServerOption = errors.New("server option not allowed in a template")

var optionKey = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)

// optionName is the name the server reads in option o (KEY=VALUE or KEY):
// without leading dashes, in lower case, '_' as '-' (the server takes
// both), and without the prefixes it accepts before a name (loose-,
// maximum-, skip-, disable-, enable-, in any number and order).
func optionName(o string) string {
	k, _, _ := strings.Cut(o, "=")
	k = strings.ReplaceAll(strings.ToLower(strings.TrimSpace(k)), "_", "-")
	k = strings.TrimLeft(k, "-")
	for stripped := true; stripped; {
		stripped = false
		for _, p := range optionPrefixes {
			if strings.HasPrefix(k, p) {
				k, stripped = k[len(p):], true
			}
		}
	}
	return k
}

// CheckTemplateOption refuses a server option a template may not carry:
// one whose name (however spelled: optionName) is not in
// TemplateOptions, or whose value holds a control character. The error
// names the option and what to do about it.
func CheckTemplateOption(o string) error {
	name := optionName(o)
	_, v, _ := strings.Cut(o, "=")
	if _, ok := TemplateOptions[name]; !ok {
		return errtag.New(ErrServerOption, "server option %q: a template carries data settings only, never an option that loads code, names a file or directory, or changes TLS, logs, accounts or privileges (allowed: %s; docs/security.md, \"A template is data\")", clip(o), strings.Join(AllowedTemplateOptions(), ", "))
	}
	if len(v) > 1024 || strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return errtag.New(ErrServerOption, "server option %q: its value must be at most 1024 printable characters", clip(o))
	}
	return nil
}

// CheckTemplateOptions is CheckTemplateOption of each option.
func CheckTemplateOptions(opts []string) error {
	for _, o := range opts {
		if err := CheckTemplateOption(o); err != nil {
			return err
		}
	}
	return nil
}

// AllowedTemplateOptions are the names in TemplateOptions, sorted.
func AllowedTemplateOptions() []string {
	out := make([]string, 0, len(TemplateOptions))
	for k := range TemplateOptions {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// clip shortens an option for an error message.
func clip(s string) string {
	if len(s) > 120 {
		return s[:120] + "..."
	}
	return s
}

// MergeOptions checks server options given as KEY=VALUE (or KEY, for a
// flag; underscores and dashes are the same) and returns base with each
// replaced or added, in a stable order: base's order, then new keys in the
// order given. An option pristine sets itself is refused, and so is any
// option a template may not carry (CheckTemplateOption): the options
// become the template's, recorded in its meta.json and exported with it.
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
		if err := CheckTemplateOption(o); err != nil {
			return nil, fmt.Errorf("%w: build the template without it", err)
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
