package mariadb

import (
	"errors"
	"strconv"
	"strings"
	"testing"
)

func TestMergeOptions(t *testing.T) {
	base := []string{"character-set-server=utf8mb4", "collation-server=utf8mb4_unicode_ci"}
	for _, tc := range []struct {
		name string
		user []string
		want string // joined by spaces; "" with err
		err  string
	}{
		{"none", nil, "character-set-server=utf8mb4 collation-server=utf8mb4_unicode_ci", ""},
		{"override with underscores", []string{"collation_server=utf8mb4_bin"}, "character-set-server=utf8mb4 collation-server=utf8mb4_bin", ""},
		{"new key and flag", []string{"--sql-mode=STRICT_ALL_TABLES", "skip-character-set-client-handshake"}, "character-set-server=utf8mb4 collation-server=utf8mb4_unicode_ci sql-mode=STRICT_ALL_TABLES skip-character-set-client-handshake", ""},
		{"reserved", []string{"socket=/tmp/x"}, "", "pristine sets socket itself"},
		{"reserved with loose-", []string{"loose-datadir=/etc"}, "", "pristine sets loose-datadir itself"},
		{"log size", []string{"innodb_log_file_size=1G"}, "", "--log-file-size"},
		{"bad key", []string{"=x"}, "", "want KEY=VALUE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := MergeOptions(base, tc.user)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("MergeOptions(%q) error = %v, want one containing %q", tc.user, err, tc.err)
				}
				return
			}
			if err != nil || strings.Join(got, " ") != tc.want {
				t.Fatalf("MergeOptions(%q) = %q, %v; want %q", tc.user, got, err, tc.want)
			}
		})
	}
	if base[1] != "collation-server=utf8mb4_unicode_ci" {
		t.Fatal("MergeOptions changed its base slice")
	}
}

// TestCheckTemplateOption: the options a template may carry are an
// allow-list, and no spelling the server accepts (leading dashes, '_' for
// '-', upper case, the loose-, maximum-, skip-, enable-, disable-
// prefixes) gets a refused option through. Each refusal names the option.
func TestCheckTemplateOption(t *testing.T) {
	refused := []string{
		// Code and files.
		"plugin-dir=/proc/self/cwd/app", "plugin-load-add=evil.so", "plugin-load=evil=evil.so", "plugin_maturity=unknown",
		"init-file=/tmp/x.sql", "init-connect=DO 1", "character-sets-dir=/tmp", "lc-messages-dir=/tmp", "ft-stopword-file=/etc/shadow",
		"secure-file-priv=", "local-infile=1", "symbolic-links", "basedir=/tmp", "core-file",
		// TLS and transport.
		"require-secure-transport=OFF", "ssl-cert=/tmp/c.pem", "ssl=0", "tls-version=TLSv1",
		// Accounts and privileges.
		"skip-grant-tables", "default-authentication-plugin=mysql_native_password", "log-bin-trust-function-creators=1", "old-passwords=1",
		// Logs.
		"general-log=1", "general-log-file=/tmp/g.log", "slow-query-log-file=/tmp/s.log", "log-error=/tmp/e.log", "log-bin=/tmp/bin", "log-output=FILE",
		// What pristine sets.
		"datadir=/etc", "socket=/tmp/s", "innodb-buffer-pool-size=64G", "max-connections=100000", "performance-schema=1",
		// Bypass spellings of refused options.
		"--plugin-dir=/x", "PLUGIN_DIR=/x", "Plugin-Load-Add=evil.so", "loose-plugin-load-add=evil.so", "loose_plugin_dir=/x",
		"--loose-plugin-dir=/x", "maximum-plugin-dir=/x", "enable-plugin-load-add=evil.so", "disable-require-secure-transport",
		"skip-require-secure-transport", "loose-skip-grant-tables", "LOOSE_SKIP_GRANT_TABLES", "skip_grant_tables", "  plugin-dir=/x",
		"enable-general-log", "loose-enable-general-log", "skip-ssl", "disable-ssl", "loose-disable-ssl",
		// Nothing at all, and a value with a control character.
		"", "=x", "--", "sql-mode=ANSI\n--plugin-dir=/x",
	}
	for _, o := range refused {
		err := CheckTemplateOption(o)
		if err == nil {
			t.Errorf("CheckTemplateOption(%q) = nil, want refused", o)
			continue
		}
		if !errors.Is(err, ErrServerOption) || !strings.Contains(err.Error(), strconv.Quote(clip(o))) {
			t.Errorf("CheckTemplateOption(%q) = %v: want ErrServerOption naming the option", o, err)
		}
	}
	allowed := []string{
		"character-set-server=latin1", "collation-server=latin1_swedish_ci", "character_set_server=utf8mb4", "--sql-mode=STRICT_ALL_TABLES",
		"sql_mode=ANSI_QUOTES", "lower-case-table-names=1", "default-time-zone=+00:00", "explicit_defaults_for_timestamp=OFF",
		"skip-character-set-client-handshake", "loose-innodb-page-size=8k", "event_scheduler=ON", "default-storage-engine=MyISAM",
		"transaction-isolation=READ-COMMITTED", "max-allowed-packet=64M",
	}
	for _, o := range allowed {
		if err := CheckTemplateOption(o); err != nil {
			t.Errorf("CheckTemplateOption(%q) = %v, want allowed", o, err)
		}
	}
	// The CLI's --server-option takes the same list.
	if _, err := MergeOptions(nil, []string{"plugin_load_add=evil.so"}); !errors.Is(err, ErrServerOption) {
		t.Errorf("MergeOptions(plugin_load_add) = %v, want refused", err)
	}
}
