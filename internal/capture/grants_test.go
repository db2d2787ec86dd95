package capture

import "testing"

func TestGrantsParse(t *testing.T) {
	g := &grants{user: "u@h", global: map[string]bool{}, db: map[string]map[string]bool{}, tableLevel: map[string]bool{}}
	for _, l := range []string{
		"GRANT RELOAD, PROCESS ON *.* TO `u`@`h` IDENTIFIED BY PASSWORD '*ABC'",
		"GRANT SELECT, INSERT (`a`, `b`), SHOW VIEW ON `shop`.* TO `u`@`h`",
		"GRANT ALL PRIVILEGES ON `test\\_%`.* TO `u`@`h`",
		"GRANT SELECT ON `other`.`t` TO `u`@`h`",
		"GRANT EXECUTE ON PROCEDURE `shop`.`p` TO `u`@`h`",
		"GRANT `role1` TO `u`@`h`",
	} {
		g.add(l)
	}
	for _, tc := range []struct {
		priv, db string
		want     bool
	}{
		{"RELOAD", "", true},
		{"LOCK TABLES", "", false},
		{"SELECT", "shop", true},
		{"INSERT", "shop", true},
		{"SHOW VIEW", "shop", true},
		{"TRIGGER", "shop", false},
		{"TRIGGER", "test_1", true},
		{"TRIGGER", "testx1", false},
		{"SELECT", "other", false},
	} {
		if got := g.has(tc.priv, tc.db); got != tc.want {
			t.Errorf("has(%s, %q) = %v, want %v", tc.priv, tc.db, got, tc.want)
		}
	}
	if !g.tableLevel["other"] || !g.tableLevel["shop"] {
		t.Errorf("table and routine grants not noted: %v", g.tableLevel)
	}
}

func TestKeepGrant(t *testing.T) {
	dbs := []string{"shop"}
	for _, tc := range []struct {
		line string
		want bool
	}{
		{"GRANT USAGE ON *.* TO `app`@`%` IDENTIFIED BY PASSWORD '*X'", true},
		{"GRANT SELECT ON `shop`.* TO `app`@`%`", true},
		{"GRANT SELECT ON `shop`.`t` TO `app`@`%`", true},
		{"GRANT EXECUTE ON PROCEDURE `shop`.`p` TO `app`@`%`", true},
		{"GRANT SELECT ON `other`.* TO `app`@`%`", false},
		{"GRANT `r` TO `app`@`%`", false},
		{"GRANT PROXY ON ''@'%' TO 'app'@'%'", false},
	} {
		if got := keepGrant(tc.line, dbs); got != tc.want {
			t.Errorf("keepGrant(%q) = %v, want %v", tc.line, got, tc.want)
		}
	}
}
