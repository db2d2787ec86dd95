package capture_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"

	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/mariadb/mariadbtest"
	"github.com/pristinedb/pristine/internal/template"
	"github.com/pristinedb/pristine/internal/template/templatetest"
)

// TestPhysicalCaptureOfAStockServer: a physical capture (mariadb-backup,
// or MySQL's clone plugin) of a server installed and configured as a user
// would, with no --server-option: a default install, and one whose
// administrator chose another collation. The build works (MySQL's clone
// plugin refuses a recipient whose character set or collation differs
// from the donor's), and the template's server takes the source's
// settings: the same character set and collation, and the same table
// from a CREATE TABLE that names none.
func TestPhysicalCaptureOfAStockServer(t *testing.T) {
	bin := mariadbtest.Binary(t)
	if bin.Flavor == mariadb.MariaDB {
		needBackup(t)
	}
	for _, tc := range []struct {
		name  string
		extra []string
	}{
		{"default install", nil},
		{"configured collation", []string{"--character-set-server=utf8mb4", "--collation-server=utf8mb4_unicode_ci"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := mariadbtest.StartStock(t, tc.extra...)
			execAll(t, src.DB, "CREATE DATABASE shop", "CREATE TABLE shop.items (id INT PRIMARY KEY, name VARCHAR(20))",
				"INSERT INTO shop.items VALUES (1, 'a'), (2, 'A'), (3, 'á')")
			url := "mysql://root@localhost/?socket=" + src.Socket
			if bin.Flavor == mariadb.MySQL {
				url = cloneDonor(t, src)
			}
			st := templatetest.NewBuilder(t, "auto")
			m, _, err := st.Build(context.Background(), template.BuildOptions{Name: "stock", Profile: mariadb.DefaultProfile(),
				Server: template.ServerSource{DSN: url, Databases: []string{"shop"}, Method: "physical"}})
			if err != nil {
				t.Fatalf("physical capture of a %s: %v", tc.name, err)
			}
			r, err := st.Start(context.Background(), m, "stock-check")
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			tmpl, err := r.Inst.Open("shop")
			if err != nil {
				t.Fatal(err)
			}
			defer tmpl.Close()
			for _, q := range []string{
				"SELECT CONCAT(@@character_set_server, ' ', @@collation_server)",
				"SELECT GROUP_CONCAT(id ORDER BY id) FROM shop.items WHERE name = 'a'",
			} {
				if got, want := queryString(t, tmpl, q), queryString(t, src.DB, q); got != want {
					t.Errorf("%s: template %q, source %q", q, got, want)
				}
			}
			execAll(t, src.DB, "CREATE TABLE shop.fresh (s VARCHAR(20))")
			execAll(t, tmpl, "CREATE TABLE shop.fresh (s VARCHAR(20))")
			if got, want := showCreate(t, tmpl), showCreate(t, src.DB); got != want {
				t.Errorf("a new table in the template:\n%s\non the source:\n%s\n(template options %q)", got, want, m.ServerOptions)
			}
		})
	}
}

// TestCloneRefusalNamesTheOption: a --server-option that gives the
// template another collation than the MySQL source's makes the clone
// plugin refuse the recipient; the error says which setting and what to
// do, not that the source's account lacks a privilege.
func TestCloneRefusalNamesTheOption(t *testing.T) {
	if mariadbtest.Binary(t).Flavor != mariadb.MySQL {
		t.Skip("the clone plugin is MySQL's")
	}
	src := mariadbtest.StartStock(t)
	execAll(t, src.DB, "CREATE DATABASE shop", "CREATE TABLE shop.items (id INT PRIMARY KEY)")
	prof := mariadb.DefaultProfile()
	prof.Options = []string{"collation-server=utf8mb4_bin"}
	st := templatetest.NewBuilder(t, "auto")
	_, _, err := st.Build(context.Background(), template.BuildOptions{Name: "stock", Profile: prof,
		Server: template.ServerSource{DSN: cloneDonor(t, src), Databases: []string{"shop"}, Method: "physical"}})
	if err == nil || !strings.Contains(err.Error(), "collation_server") || !strings.Contains(err.Error(), "a --server-option that changes one must go") {
		t.Fatalf("clone with --server-option collation-server=utf8mb4_bin from a utf8mb4_0900_ai_ci source: %v, want the setting named and the fix", err)
	}
}

// cloneDonor readies a MySQL stock server for the clone plugin as its
// administrator would (the plugin, an account with BACKUP_ADMIN that logs
// in over TCP) and returns the URL to capture it by.
func cloneDonor(t *testing.T, src *mariadbtest.Stock) string {
	t.Helper()
	execAll(t, src.DB, "INSTALL PLUGIN clone SONAME 'mysql_clone.so'",
		"CREATE USER cloner@'127.0.0.1' IDENTIFIED BY 'cloner-pw'",
		"GRANT BACKUP_ADMIN, SELECT, SHOW VIEW, EVENT, TRIGGER, RELOAD, PROCESS, REPLICATION CLIENT ON *.* TO cloner@'127.0.0.1'")
	return fmt.Sprintf("mysql://cloner:cloner-pw@127.0.0.1:%d/", src.Port)
}

// showCreate is SHOW CREATE TABLE shop.fresh.
func showCreate(t *testing.T, db *sql.DB) string {
	t.Helper()
	var name, ddl string
	if err := db.QueryRow("SHOW CREATE TABLE shop.fresh").Scan(&name, &ddl); err != nil {
		t.Fatal(err)
	}
	return ddl
}
