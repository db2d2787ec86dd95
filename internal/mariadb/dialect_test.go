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

// TestCapabilitiesPerFlavor pins what each family answers, so a change
// of a capability is a visible change of this table.
func TestCapabilitiesPerFlavor(t *testing.T) {
	for _, tc := range []struct {
		f                                                                          Flavor
		name, client, accounts                                                     string
		clone, backup, infileOff, seq, alterUser, byName, hex, gtidPos, checksumOK bool
	}{
		{MariaDB, "MariaDB", "mariadb-dump", "global_priv", false, true, false, true, false, true, false, true, true},
		{MySQL, "MySQL", "mysqldump", "user", true, false, true, false, true, false, true, false, false},
	} {
		accounts, tables := tc.f.GrantTables()
		got := []any{tc.f.Name(), tc.f.Client("mariadb-dump"), accounts, tc.f.ClonePlugin(), tc.f.MariadbBackup(), tc.f.LocalInfileOff(), tc.f.SequenceEngine(),
			tc.f.PasswordByAlterUser(), tc.f.RolesByName(), tc.f.HexHashesStatement() != "", tc.f.GTIDBinlogPos(), tc.f.ChecksumTableStable()}
		want := []any{tc.name, tc.client, tc.accounts, tc.clone, tc.backup, tc.infileOff, tc.seq, tc.alterUser, tc.byName, tc.hex, tc.gtidPos, tc.checksumOK}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("%s: capability %d = %v, want %v", tc.f, i, got[i], want[i])
			}
		}
		if tables[0].Name != accounts {
			t.Errorf("%s: the first grant table is %s, want the accounts' table %s", tc.f, tables[0].Name, accounts)
		}
	}
}

// TestAccountQueriesPerFlavor: the mysql schema's reads of accounts, role
// grants and event definers name each family's own tables, so no read is
// tried on one family's tables and retried on the other's.
func TestAccountQueriesPerFlavor(t *testing.T) {
	for _, tc := range []struct {
		f                              Flavor
		accounts, roleGrants, eventsIn string
	}{
		{MariaDB, "is_role", "mysql.roles_mapping", "mysql.event"},
		{MySQL, "mysql.role_edges", "mysql.role_edges", "information_schema.EVENTS"},
	} {
		for what, got := range map[string][2]string{
			"AccountsQuery":      {tc.f.AccountsQuery(), tc.accounts},
			"RoleGrantsQuery":    {tc.f.RoleGrantsQuery(), tc.roleGrants},
			"EventDefinersQuery": {tc.f.EventDefinersQuery("('app')"), tc.eventsIn},
		} {
			if !strings.Contains(got[0], got[1]) {
				t.Errorf("%s.%s = %q, want it to read %s", tc.f, what, got[0], got[1])
			}
		}
	}
	if q := MariaDB.EventDefinersQuery("('app')"); !strings.HasSuffix(q, "IN ('app')") {
		t.Errorf("EventDefinersQuery does not end with the schemas' list: %q", q)
	}
}
