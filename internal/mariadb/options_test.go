package mariadb

import (
	"strings"
	"testing"
)

func TestMergeOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		user []string
		want string // joined by spaces; "" with err
		err  string
	}{
		{"defaults", nil, "character-set-server=utf8mb4 collation-server=utf8mb4_general_ci", ""},
		{"override with underscores", []string{"character_set_server=latin1"}, "character-set-server=latin1 collation-server=utf8mb4_general_ci", ""},
		{"new key and flag", []string{"--sql-mode=STRICT_ALL_TABLES", "skip-character-set-client-handshake"}, "character-set-server=utf8mb4 collation-server=utf8mb4_general_ci sql-mode=STRICT_ALL_TABLES skip-character-set-client-handshake", ""},
		{"reserved", []string{"socket=/tmp/x"}, "", "pristine sets socket itself"},
		{"reserved with loose-", []string{"loose-datadir=/etc"}, "", "pristine sets loose-datadir itself"},
		{"log size", []string{"innodb_log_file_size=1G"}, "", "--log-file-size"},
		{"bad key", []string{"=x"}, "", "want KEY=VALUE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := MergeOptions(DefaultServerOptions, tc.user)
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
	if DefaultServerOptions[0] != "character-set-server=utf8mb4" {
		t.Fatal("MergeOptions changed its base slice")
	}
}
