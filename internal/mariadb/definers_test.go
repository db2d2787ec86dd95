package mariadb

import (
	"strings"
	"testing"
)

func TestCutDefiner(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"CREATE DEFINER=`root`@`localhost` TRIGGER t BEFORE INSERT ON x FOR EACH ROW SET @a=1", "TRIGGER t BEFORE INSERT ON x FOR EACH ROW SET @a=1"},
		{`CREATE DEFINER="ro""ot"@"local host" TRIGGER t`, "TRIGGER t"},
		{"CREATE DEFINER='a'@'%' TRIGGER t", "TRIGGER t"},
		{"CREATE DEFINER=a@localhost TRIGGER t", "TRIGGER t"},
		{"CREATE DEFINER=`we``ird @`@`h` TRIGGER t", "TRIGGER t"},
		{"create definer = CURRENT_USER() trigger t", "trigger t"},
		{"CREATE DEFINER=`role` TRIGGER t", "TRIGGER t"},
		{"CREATE TRIGGER t", "TRIGGER t"},
	} {
		got, err := cutDefiner(c.in)
		if err != nil || got != c.want {
			t.Errorf("cutDefiner(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"DROP TRIGGER t", "CREATE DEFINER=`root TRIGGER t"} {
		if got, err := cutDefiner(bad); err == nil {
			t.Errorf("cutDefiner(%q) = %q, want an error", bad, got)
		}
	}
}

func TestAdminDefiner(t *testing.T) {
	for _, c := range []struct {
		user, host, schema string
		want               bool
	}{
		{"root", "localhost", "app", true}, {"root", "127.0.0.1", "app", true}, {"pristine", "%", "app", true},
		{"lease_0a1b", "%", "app", true}, {"", "localhost", "app", true}, {"mysql", "localhost", "app", true},
		{"mariadb.sys", "localhost", "app", true}, {"mariadb.sys", "localhost", "mysql", false},
		{"mariadb.sys", "localhost", "sys", false}, {"app_owner", "%", "app", false}, {"rooter", "%", "app", false},
	} {
		if got := AdminDefiner(c.user, c.host, c.schema); got != c.want {
			t.Errorf("AdminDefiner(%q, %q, %q) = %v, want %v", c.user, c.host, c.schema, got, c.want)
		}
	}
}

func TestOwnerGrants(t *testing.T) {
	for _, c := range []struct {
		name             string
		schemas, leaseDB []string
		shared           bool
		want             string
	}{
		{"one database per slot: a lease's grants", []string{"app"}, []string{"app"}, false, "ALL PRIVILEGES ON `%`.*|SHOW VIEW ON `mysql`.*|SHOW VIEW ON `sys`.*|SELECT ON `performance_schema`.*"},
		{"shared: no lease database, no system schema", []string{"app", "app_2", "mysql", "sys", "shared"}, []string{"app", "app_2"}, true, "ALL PRIVILEGES ON `shared`.*"},
		{"shared, nothing else", []string{"app"}, []string{"app", "app_2"}, true, ""},
	} {
		if got := strings.Join(OwnerGrants(c.schemas, c.leaseDB, c.shared), "|"); got != c.want {
			t.Errorf("%s: OwnerGrants = %q, want %q", c.name, got, c.want)
		}
	}
}

func TestParseRoleList(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []mysqlKey
	}{
		{"", nil},
		{"`public_role`@`%`", []mysqlKey{{"public_role", "%"}}},
		{"r1, 'r2'@'localhost',r3", []mysqlKey{{"r1", "%"}, {"r2", "localhost"}, {"r3", "%"}}},
		{"`we``ird`@`h`", []mysqlKey{{"we`ird", "h"}}},
	} {
		got := parseRoleList(c.in)
		if len(got) != len(c.want) {
			t.Errorf("parseRoleList(%q) = %v, want %v", c.in, got, c.want)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("parseRoleList(%q) = %v, want %v", c.in, got, c.want)
			}
		}
	}
}
