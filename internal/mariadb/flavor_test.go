package mariadb

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Each flavour gets only options it knows: a MySQL server refuses
// innodb_log_file_size (9.x) and Aria's, MariaDB refuses
// innodb_redo_log_capacity and mysqlx. MySQL slots run at its smallest
// redo log (TestProfileMySQLRedo).
func TestFlavorArgs(t *testing.T) {
	for _, tc := range []struct {
		flavor     Flavor
		want, deny []string
	}{
		{MariaDB, []string{"--innodb-log-file-size=50331648", "--innodb-flush-method=nosync", "--aria-pagecache-buffer-size=1048576"},
			[]string{"--innodb-redo-log-capacity", "--mysqlx", "O_DIRECT_NO_FSYNC", "validate-tablespace", "caching-sha2"}},
		{MySQL, []string{"--innodb-redo-log-capacity=8388608", "--mysqlx=OFF", "--innodb-flush-method=nosync", "--caching-sha2-password-digest-rounds=5000"},
			[]string{"--innodb-log-file-size", "aria", "O_DIRECT", "slave"}},
	} {
		args := strings.Join(DefaultProfile().args(&Binary{Flavor: tc.flavor, Major: 11, Minor: 8}), " ")
		for _, w := range tc.want {
			if !strings.Contains(args, w) {
				t.Errorf("%s: %s lacks %s", tc.flavor, args, w)
			}
		}
		for _, d := range tc.deny {
			if strings.Contains(args, d) {
				t.Errorf("%s: %s has %s", tc.flavor, args, d)
			}
		}
	}
}

// A MySQL template is stored without auto.cnf, so every clone makes its
// own server_uuid; a MariaDB data directory is left alone.
func TestForgetIdentity(t *testing.T) {
	for _, tc := range []struct {
		flavor Flavor
		kept   bool
	}{{MySQL, false}, {MariaDB, true}} {
		dir := t.TempDir()
		f := filepath.Join(dir, "auto.cnf")
		if err := os.WriteFile(f, []byte("[auto]\nserver-uuid=x\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := (&Binary{Flavor: tc.flavor}).ForgetIdentity(dir); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(f); (err == nil) != tc.kept {
			t.Errorf("%s: auto.cnf kept = %v, want %v", tc.flavor, err == nil, tc.kept)
		}
	}
	if err := (&Binary{Flavor: MySQL}).ForgetIdentity(t.TempDir()); err != nil {
		t.Errorf("no auto.cnf: %v", err)
	}
}

func TestClientNames(t *testing.T) {
	my, maria := &Binary{Flavor: MySQL}, &Binary{Flavor: MariaDB}
	for name, want := range map[string]string{"mariadb": "mysql", "mariadb-dump": "mysqldump", "mariadb-admin": "mysqladmin", "other": "other"} {
		if got := my.Client(name); got != want {
			t.Errorf("MySQL Client(%s) = %s, want %s", name, got, want)
		}
		if got := maria.Client(name); got != name {
			t.Errorf("MariaDB Client(%s) = %s", name, got)
		}
	}
}
