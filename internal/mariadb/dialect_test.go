package mariadb

import (
	"strings"
	"testing"
)

func TestFlavorOf(t *testing.T) {
	for v, want := range map[string]Flavor{
		"10.11.19-MariaDB-0+deb12u1": MariaDB,
		"11.8.3-MariaDB-log":         MariaDB,
		"5.5.5-10.11.6-mariadb":      MariaDB,
		"9.7.0":                      MySQL,
		"8.4.6-0ubuntu0.24.04.1":     MySQL,
		"":                           "",
	} {
		if got := FlavorOf(v); got != want {
			t.Errorf("FlavorOf(%q) = %q, want %q", v, got, want)
		}
	}
}

// TestUnknownFlavorIsMariaDB: a flavour not known (a source whose version
// was not read) answers every capability as MariaDB, as before the
// capabilities were methods.
func TestUnknownFlavorIsMariaDB(t *testing.T) {
	var f Flavor
	if f.Name() != MariaDB.Name() || f.ClonePlugin() || f.LocalInfileOff() || !f.SequenceEngine() || f.PasswordByAlterUser() || !strings.Contains(f.ColumnsQuery(), "IS_GENERATED") || !f.GTIDBinlogPos() || !f.ChecksumTableStable() || !f.RolesByName() || f.HexHashesStatement() != "" || f.Client("mariadb") != "mariadb" {
		t.Errorf("the empty flavour does not answer as MariaDB")
	}
	if a, _ := f.GrantTables(); a != "global_priv" {
		t.Errorf("GrantTables of the empty flavour: accounts in %s, want global_priv", a)
	}
	if f.MariadbBackup() {
		t.Errorf("the empty flavour claims mariadb-backup copies it")
	}
}
