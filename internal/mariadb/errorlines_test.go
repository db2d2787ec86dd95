package mariadb

import "testing"

func TestErrorLines(t *testing.T) {
	for _, tc := range []struct{ name, out, want string }{
		{"marked lines win over the boilerplate",
			"a\n2026-11-22 [ERROR] InnoDB: io_setup() failed\nb\nPlease check all of the above\nat https://mariadb.org/jira\n",
			"2026-11-22 [ERROR] InnoDB: io_setup() failed"},
		{"no marked line: the tail", "one\ntwo\nthree\n", "two | three"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := errorLines([]byte(tc.out), 2); got != tc.want {
				t.Errorf("errorLines = %q, want %q", got, tc.want)
			}
		})
	}
}
