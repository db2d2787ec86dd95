package verify

import (
	"strings"
	"testing"
)

func TestCanonText(t *testing.T) {
	pairs := []Pair{{"app", "app_2"}, {"ref", "ref"}}
	src, dst := newCanon(pairs, false), newCanon(pairs, true)
	tests := []struct {
		c        canon
		in, want string
	}{
		{dst, "select `app_2`.`t`.`id` from `app_2`.`t`", "select `app`.`t`.`id` from `app`.`t`"},
		{dst, "GRANT SELECT ON `app_2`.* TO `u`@`%`", "GRANT SELECT ON `app`.* TO `u`@`%`"},
		{dst, "from `app`.`t`", "from `app`/*the source's schema, not the copy's*/.`t`"},
		{dst, "`app_2` AS `app_2`", "`app_2` AS `app_2`"}, // not a qualifier
		{dst, "REFERENCES `ref`.`c` (`x`)", "REFERENCES `ref`.`c` (`x`)"},
		{src, "from `app`.`t`", "from `app`.`t`"},
		{dst, "`we``ird`.`x` and `app_2`.`y`", "`we``ird`.`x` and `app`.`y`"},
		{dst, "no quotes at all", "no quotes at all"},
		{dst, "unterminated `app_2", "unterminated `app_2"},
	}
	for _, tt := range tests {
		if got := tt.c.text(tt.in); got != tt.want {
			t.Errorf("text(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestSplitCreateTable(t *testing.T) {
	create := "CREATE TABLE `t` (\n" +
		"  `id` int(11) NOT NULL AUTO_INCREMENT,\n" +
		"  `we``ird` varchar(5) DEFAULT NULL,\n" +
		"  PRIMARY KEY (`id`),\n" +
		"  UNIQUE KEY `u` (`we``ird`),\n" +
		"  FULLTEXT KEY `ft` (`we``ird`),\n" +
		"  CONSTRAINT `fk` FOREIGN KEY (`id`) REFERENCES `p` (`id`),\n" +
		"  CONSTRAINT `ck` CHECK (`id` > 0)\n" +
		") ENGINE=InnoDB AUTO_INCREMENT=7 DEFAULT CHARSET=latin1\n" +
		" PARTITION BY HASH (`id`)\nPARTITIONS 2"
	got := map[string]string{}
	var order []string
	for _, p := range splitCreateTable(create) {
		got[p[0]] = p[1]
		order = append(order, p[0])
	}
	want := map[string]string{
		"column `id`":      "`id` int(11) NOT NULL AUTO_INCREMENT",
		"column `we``ird`": "`we``ird` varchar(5) DEFAULT NULL",
		"primary key":      "PRIMARY KEY (`id`)",
		"index `u`":        "UNIQUE KEY `u` (`we``ird`)",
		"index `ft`":       "FULLTEXT KEY `ft` (`we``ird`)",
		"foreign key `fk`": "CONSTRAINT `fk` FOREIGN KEY (`id`) REFERENCES `p` (`id`)",
		"check `ck`":       "CONSTRAINT `ck` CHECK (`id` > 0)",
		"column order":     "`id`, `we``ird`",
		"options":          "ENGINE=InnoDB DEFAULT CHARSET=latin1",
		"AUTO_INCREMENT":   "7",
		"partitioning":     "PARTITION BY HASH (`id`)\nPARTITIONS 2",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("part %s = %q, want %q", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("parts %s, want %d of them", strings.Join(order, "; "), len(want))
	}
	if p := splitCreateTable("CREATE TABLE `x` (\n  `a` int\n) ENGINE=MyISAM"); p[len(p)-1] != [2]string{"AUTO_INCREMENT", "none"} {
		t.Errorf("a table without a counter: %v", p)
	}
}

func TestParsePairs(t *testing.T) {
	tests := []struct {
		in   []string
		want string
		bad  bool
	}{
		{[]string{"app=app_2"}, "app>app_2", false},
		{[]string{"a=b, c=d", "e=f"}, "a>b c>d e>f", false},
		{[]string{"app"}, "", true},
		{[]string{"=x"}, "", true},
	}
	for _, tt := range tests {
		ps, err := ParsePairs(tt.in)
		if (err != nil) != tt.bad {
			t.Errorf("ParsePairs(%q) error = %v", tt.in, err)
			continue
		}
		var got []string
		for _, p := range ps {
			got = append(got, p.Source+">"+p.Target)
		}
		if strings.Join(got, " ") != tt.want {
			t.Errorf("ParsePairs(%q) = %v, want %s", tt.in, got, tt.want)
		}
	}
}

func TestIgnoredUsers(t *testing.T) {
	tests := []struct {
		user, host string
		want       bool
	}{
		{"root", "localhost", true},
		{"", "localhost", true},
		{"pristine", "%", true},
		{"lease_0a1b2c3d4e5f", "%", true},
		{"lease_0a1b2c3d4e5f", "localhost", false},
		{"app_owner", "%", false},
		{"ci", "10.0.0.1", true},
	}
	for _, tt := range tests {
		if got := ignored(tt.user, tt.host, append(pristineUsers, "ci@10.*")); got != tt.want {
			t.Errorf("ignored(%s@%s) = %v, want %v", tt.user, tt.host, got, tt.want)
		}
	}
}
