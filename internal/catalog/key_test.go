package catalog_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/pristinedb/pristine/internal/catalog"
)

// keyInputs writes the fixed input files the pinned keys were computed
// over into a new directory and makes it the working directory (watch
// paths are hashed by name, so they are relative).
func keyInputs(t *testing.T) {
	t.Helper()
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
	t.Chdir(dir)
}

const (
	pinServer  = "10.11.6-MariaDB-0+deb12u1"
	pinProfile = "log=104857600 options=character-set-server=utf8mb4 collation-server=utf8mb4_general_ci"
)

// TestKeyPinned: the content key of fixed inputs is the one pristine
// computed before the catalog was split from the builder (values taken
// from that code). A template's key names its directory: if it moved,
// every template on every runner would be built again.
func TestKeyPinned(t *testing.T) {
	keyInputs(t)
	src := "tcp db.example:3306 server=db1 datadir=/var/lib/mysql/ version=10.11.6-MariaDB"
	tests := []struct {
		name string
		in   catalog.Inputs
		want string
	}{
		{"one SQL file", catalog.Inputs{Name: "app", Server: pinServer, Flavor: "mariadb", Profile: pinProfile, Database: "app", FromSQL: "one.sql"},
			"9e02cdea269f9f0fbd9b3e240c24e8c2bddd35f415bf8991e0ddf5b728de81a8"},
		{"SQL directory, copies", catalog.Inputs{Name: "app", Server: pinServer, Flavor: "mariadb", Profile: pinProfile, Database: "db1", DBsPerSlot: 3, FromSQL: "sql"},
			"15650e468e7edb39a3ed4cbbabb7ab763583b8916f627a3c83f92e337533c2ad"},
		{"init command and watch", catalog.Inputs{Name: "mig", Server: pinServer, Flavor: "mariadb", Profile: "log=50331648", Database: "mig", InitCmd: "make migrate", Watch: []string{"watch.txt", "sql"}},
			"f9f5c48cdd57222b5bfcd8beb36b57a3401b61581c03ac0b82104afd84172004"},
		{"client key", catalog.Inputs{Name: "cli.ent-1", Key: "sha256:abc", Server: pinServer, Flavor: "mariadb", Profile: pinProfile, Database: "cli_ent_1"},
			"8a70632b8520fedd4dd7605b67dfa998ffcd754f7f9e06fd29267b5fb37eec67"},
		{"live, logical", catalog.Inputs{Name: "live", Server: pinServer, Flavor: "mariadb", Profile: pinProfile, Database: "shop",
			Live: &catalog.Live{Source: src, Databases: []string{"shop", "crm"}, Method: "logical", Marker: "gtid 0-1-42"}},
			"9f1b68fcd5183eafea71307118e133dba85e135359796a6f1a2c48fefd4273a9"},
		{"live, physical, passwords, missing watch path", catalog.Inputs{Name: "live2", Server: pinServer, Flavor: "mariadb", Profile: pinProfile, Database: "crm", DBsPerSlot: 2, InitCmd: "true",
			Watch: []string{"watch.txt", "missing"},
			Live:  &catalog.Live{Source: src, Databases: []string{"shop", "crm"}, Method: "physical", Marker: "time 2026-11-23T12:00:00Z", WithPasswords: true}},
			"af169712cbeabb62ba75b0b48b040798e9afebcd09bcb3fd9a47b104dc749c7e"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := catalog.Key(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("Key = %s, want %s (the content key moved: existing templates would be rebuilt)", got, tc.want)
			}
		})
	}
	if got, want := catalog.BaseKey(pinServer, pinProfile), "240d45a32b94c781"; got != want {
		t.Errorf("BaseKey = %s, want %s", got, want)
	}
	// An import's key never equals a build's, and stays put for an archive.
	if got, want := catalog.ImportKey("sha256:0000"), "db5a71a7c7bade34bf32e7849c276acd4d494489e23a303ec22d714e982c44de"; got != want {
		t.Errorf("ImportKey = %s, want %s (imported templates would be imported again)", got, want)
	}
	// A group's key is the group's alone, and stays put.
	if got, want := catalog.GroupKey("runner-a", "k"), "b4030d5efd6d0632071d9496c232ec6a0cb39a41aed3e3b984fbdb7a15fa6101"; got != want {
		t.Errorf("GroupKey = %s, want %s (a group's templates would be built again)", got, want)
	}
	if catalog.GroupKey("runner-a", "k") == catalog.GroupKey("runner-b", "k") || catalog.GroupKey("a", "bk") == catalog.GroupKey("ab", "k") {
		t.Errorf("GroupKey does not tell groups apart")
	}
	// A fork's key is its parent's and the caller's, and stays put.
	if got, want := catalog.ForkKey("p", "k"), "0a0008591dce8db80fb137def93f2e98f7ec824b813f2fff79fd02890ba0c001"; got != want {
		t.Errorf("ForkKey = %s, want %s (forks with a key would be made again)", got, want)
	}
	if catalog.ForkKey("p1", "k") == catalog.ForkKey("p2", "k") || catalog.ForkKey("p", "k") == catalog.GroupKey("p", "k") {
		t.Errorf("ForkKey does not tell parents apart, or equals a group's key")
	}
}

// TestKeyFields: every input moves the key, and a missing input file is
// an error except for a live capture's watch path.
func TestKeyFields(t *testing.T) {
	keyInputs(t)
	base := catalog.Inputs{Name: "app", Server: pinServer, Flavor: "mariadb", Profile: pinProfile, Database: "app", FromSQL: "sql", Watch: []string{"watch.txt"}}
	k0, err := catalog.Key(base)
	if err != nil {
		t.Fatal(err)
	}
	for name, edit := range map[string]func(*catalog.Inputs){
		"name":     func(in *catalog.Inputs) { in.Name = "app2" },
		"key":      func(in *catalog.Inputs) { in.Key = "k" },
		"server":   func(in *catalog.Inputs) { in.Server = "11.4.2-MariaDB" },
		"flavor":   func(in *catalog.Inputs) { in.Flavor = "mysql" },
		"profile":  func(in *catalog.Inputs) { in.Profile = "log=1" },
		"database": func(in *catalog.Inputs) { in.Database = "other" },
		"copies":   func(in *catalog.Inputs) { in.DBsPerSlot = 2 },
		"init":     func(in *catalog.Inputs) { in.InitCmd = "true" },
		"sql":      func(in *catalog.Inputs) { in.FromSQL = "one.sql" },
		"watch":    func(in *catalog.Inputs) { in.Watch = nil },
	} {
		in := base
		edit(&in)
		k, err := catalog.Key(in)
		if err != nil || k == k0 {
			t.Errorf("changing %s: key %s (same: %v), err %v", name, k, k == k0, err)
		}
	}
	if k, err := catalog.Key(catalog.Inputs{Name: "app", DBsPerSlot: 0}); err != nil || k != must(t, catalog.Inputs{Name: "app", DBsPerSlot: 1}) {
		t.Errorf("DBsPerSlot 0 and 1 give different keys")
	}
	if _, err := catalog.Key(catalog.Inputs{Name: "app", FromSQL: "nope.sql"}); err == nil {
		t.Error("a missing SQL input was hashed")
	}
	if _, err := catalog.Key(catalog.Inputs{Name: "app", Watch: []string{"nope"}}); err == nil {
		t.Error("a missing watch path was hashed")
	}
}

func must(t *testing.T, in catalog.Inputs) string {
	t.Helper()
	k, err := catalog.Key(in)
	if err != nil {
		t.Fatal(err)
	}
	return k
}
