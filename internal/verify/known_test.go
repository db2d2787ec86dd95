package verify

import (
	"strings"
	"testing"
)

// TestSplitKnown: re-owned DEFINERs and reduced global grants are known
// differences; any other change of the same parts is not.
func TestSplitKnown(t *testing.T) {
	for _, c := range []struct {
		name  string
		d     Diff
		known bool
	}{
		{"root view re-owned", Diff{Kind: "view", Object: "`app`.`v`", Part: "create view", Change: Differs,
			Source: "CREATE ALGORITHM=UNDEFINED DEFINER=`root`@`localhost` SQL SECURITY DEFINER VIEW `v` AS select 1",
			Target: "CREATE ALGORITHM=UNDEFINED DEFINER=`pristine_owner`@`localhost` SQL SECURITY DEFINER VIEW `v` AS select 1"}, true},
		{"build account routine under ANSI_QUOTES", Diff{Kind: "procedure", Object: "`app`.`p`", Part: "create procedure", Change: Differs,
			Source: `CREATE DEFINER="pristine"@"%" PROCEDURE "p"() SELECT 1`,
			Target: `CREATE DEFINER="pristine_owner"@"localhost" PROCEDURE "p"() SELECT 1`}, true},
		{"re-owned and body changed", Diff{Kind: "view", Object: "`app`.`v`", Part: "create view", Change: Differs,
			Source: "CREATE DEFINER=`root`@`localhost` SQL SECURITY DEFINER VIEW `v` AS select 1",
			Target: "CREATE DEFINER=`pristine_owner`@`localhost` SQL SECURITY DEFINER VIEW `v` AS select 2"}, false},
		{"another account's object given to the owner", Diff{Kind: "view", Object: "`app`.`v`", Part: "create view", Change: Differs,
			Source: "CREATE DEFINER=`app`@`%` SQL SECURITY DEFINER VIEW `v` AS select 1",
			Target: "CREATE DEFINER=`pristine_owner`@`localhost` SQL SECURITY DEFINER VIEW `v` AS select 1"}, false},
		{"root object given to another account", Diff{Kind: "trigger", Object: "`app`.`t`", Part: "sql original statement", Change: Differs,
			Source: "CREATE DEFINER=`root`@`localhost` TRIGGER t BEFORE INSERT ON x FOR EACH ROW SET @a=1",
			Target: "CREATE DEFINER=`evil`@`localhost` TRIGGER t BEFORE INSERT ON x FOR EACH ROW SET @a=1"}, false},
		{"global grant reduced", Diff{Kind: "user", Object: "'a'@'%'", Part: "grant on *.*", Change: Differs,
			Source: "GRANT ALL PRIVILEGES ON *.* TO `a`@`%`", Target: "GRANT USAGE ON *.* TO `a`@`%`"}, true},
		{"global grant changed otherwise", Diff{Kind: "user", Object: "'a'@'%'", Part: "grant on *.*", Change: Differs,
			Source: "GRANT SELECT ON *.* TO `a`@`%`", Target: "GRANT INSERT ON *.* TO `a`@`%`"}, false},
		{"the SHOW VIEW entry that shields mysql", Diff{Kind: "user", Object: "'a'@'%'", Part: "grant on `mysql`.*", Change: Extra,
			Target: "GRANT SHOW VIEW ON `mysql`.* TO `a`@`%`"}, true},
		{"a grant on mysql that reads it", Diff{Kind: "user", Object: "'a'@'%'", Part: "grant on `mysql`.*", Change: Extra,
			Target: "GRANT SELECT ON `mysql`.* TO `a`@`%`"}, false},
		{"a missing view", Diff{Kind: "view", Object: "`app`.`v`", Change: Missing, Source: "CREATE DEFINER=`root`@`localhost` VIEW `v` AS select 1"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			rest, known := splitKnown([]Diff{c.d})
			if got := len(known) == 1; got != c.known || len(rest)+len(known) != 1 {
				t.Fatalf("known = %v (rest %v), want known %v", known, rest, c.known)
			}
		})
	}
}

// TestWriteTextKnown: known differences are printed with both texts and
// the report still says clean.
func TestWriteTextKnown(t *testing.T) {
	r := &Report{Source: "s", Target: "t", Pairs: []Pair{{"app", "app"}}, Objects: map[string]int{"view": 1},
		Known: []Diff{{Kind: "view", Object: "`app`.`v`", Part: "create view", Change: Differs,
			Source: "CREATE DEFINER=`root`@`localhost` VIEW `v` AS select 1", Target: "CREATE DEFINER=`pristine_owner`@`localhost` VIEW `v` AS select 1"}}}
	var b strings.Builder
	if err := WriteText(&b, r); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"known difference: view `app`.`v`: create view (re-owned", "source: CREATE DEFINER=`root`", "target: CREATE DEFINER=`pristine_owner`", "clean: the target is the source, object for object, but for 1 known difference\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}
