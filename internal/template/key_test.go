package template

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/pristinedb/pristine/internal/capture"
	"github.com/pristinedb/pristine/internal/mariadb"
)

// TestHashPinned: the content key every kind of build computes from its
// options (SQL files, a directory, an init command with watched paths, a
// client's key, a live capture) is the one pristine computed before the
// catalog was split from the builder (values taken from that code), so no
// existing template is built again; on a base whose time zone tables are
// empty, as every base was then (loaded tables change the key: the last
// case).
func TestHashPinned(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"one.sql":       "CREATE TABLE t (id INT PRIMARY KEY);\n",
		"sql/b.sql":     "INSERT INTO t VALUES (2);\n",
		"sql/sub/a.sql": "INSERT INTO t VALUES (1);\n",
		"watch.txt":     "migrations v3\n",
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir) // watch paths are hashed by name
	b := NewBuilder(nil, &mariadb.Binary{Version: "10.11.6-MariaDB-0+deb12u1", Flavor: "mariadb", Major: 10, Minor: 11})
	b.zoneinfo = filepath.Join(dir, "no-zoneinfo")
	p := mariadb.Profile{LogFileSize: 100 << 20, Options: []string{"character-set-server=utf8mb4", "collation-server=utf8mb4_general_ci"}}
	for _, tc := range []struct {
		opt  BuildOptions
		want string
	}{
		{BuildOptions{Name: "app", FromSQL: "one.sql", Profile: p}, "9e02cdea269f9f0fbd9b3e240c24e8c2bddd35f415bf8991e0ddf5b728de81a8"},
		{BuildOptions{Name: "app", FromSQL: "sql", Profile: p, DBsPerSlot: 3, Database: "db1"}, "15650e468e7edb39a3ed4cbbabb7ab763583b8916f627a3c83f92e337533c2ad"},
		{BuildOptions{Name: "mig", InitCmd: "make migrate", Watch: []string{"watch.txt", "sql"}, Profile: mariadb.Profile{LogFileSize: 48 << 20}}, "7a9d6b7f3f082c2212e3c503a88f19ae9e412a439473a8eea8d8cb0c30aad50a"},
		{BuildOptions{Name: "cli.ent-1", Key: "sha256:abc", Profile: p}, "8a70632b8520fedd4dd7605b67dfa998ffcd754f7f9e06fd29267b5fb37eec67"},
	} {
		got, err := b.Hash(context.Background(), tc.opt)
		if err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("Hash(%s, %s) = %s, want %s", tc.opt.Name, tc.opt.FromSQL, got, tc.want)
		}
	}
	src := &capture.Source{Config: &mysql.Config{Net: "tcp", Addr: "db.example:3306"}, Hostname: "db1", Datadir: "/var/lib/mysql/",
		Version: "10.11.6-MariaDB", Databases: []string{"shop", "crm"}}
	for _, tc := range []struct {
		opt  BuildOptions
		ls   liveSource
		want string
	}{
		{BuildOptions{Name: "live", Profile: p, Database: "shop", Server: ServerSource{DSN: "x"}},
			liveSource{src: src, method: "logical", marker: "gtid 0-1-42"}, "9f1b68fcd5183eafea71307118e133dba85e135359796a6f1a2c48fefd4273a9"},
		{BuildOptions{Name: "live2", Profile: p, Database: "crm", DBsPerSlot: 2, InitCmd: "true", Watch: []string{"watch.txt", "missing"},
			Server: ServerSource{DSN: "x", WithPasswords: true}},
			liveSource{src: src, method: "physical", marker: "time 2026-11-23T12:00:00Z"}, "af169712cbeabb62ba75b0b48b040798e9afebcd09bcb3fd9a47b104dc749c7e"},
	} {
		if got := b.hashLive(tc.opt, &tc.ls); got != tc.want {
			t.Errorf("hashLive(%s) = %s, want %s", tc.opt.Name, got, tc.want)
		}
	}
	// With time zone tables to load, the key changes: a template built on
	// a base without them is built again.
	zones := filepath.Join(dir, "zoneinfo")
	if err := os.Mkdir(zones, 0o755); err != nil {
		t.Fatal(err)
	}
	b.zoneinfo = zones
	if b.timezoneLoader() == "" {
		t.Skipf("%s is not installed: run scripts/install-deps.sh", b.bin.TimezoneLoaders()[0])
	}
	if got, err := b.Hash(context.Background(), BuildOptions{Name: "app", FromSQL: "one.sql", Profile: p}); err != nil || got == "9e02cdea269f9f0fbd9b3e240c24e8c2bddd35f415bf8991e0ddf5b728de81a8" {
		t.Errorf("Hash(app, one.sql) with time zone tables = %s, %v: the same key as without them", got, err)
	}
}
