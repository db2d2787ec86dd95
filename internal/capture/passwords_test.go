package capture

import (
	"strings"
	"testing"
)

func TestWithoutAuthentication(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"CREATE USER `u1`@`%` IDENTIFIED VIA mysql_native_password USING '*7B9EBEED26AA52ED10C0F549FA863F13C39E0209' OR unix_socket REQUIRE SSL WITH MAX_QUERIES_PER_HOUR 5 ACCOUNT LOCK PASSWORD EXPIRE INTERVAL 10 DAY",
			"CREATE USER `u1`@`%` REQUIRE SSL WITH MAX_QUERIES_PER_HOUR 5 ACCOUNT LOCK PASSWORD EXPIRE INTERVAL 10 DAY"},
		{"CREATE USER `u2`@`%` IDENTIFIED BY PASSWORD '*B69027D44F6E5EDC07F1AEAD1477967B16F28227' PASSWORD EXPIRE", "CREATE USER `u2`@`%` PASSWORD EXPIRE"},
		{"CREATE USER `u3`@`%`", "CREATE USER `u3`@`%`"},
		{"CREATE USER `u4`@`%` IDENTIFIED VIA unix_socket", "CREATE USER `u4`@`%`"},
		{"CREATE USER `we ird`@`h`` x` IDENTIFIED BY PASSWORD '*B69027D44F6E5EDC07F1AEAD1477967B16F28227' ACCOUNT UNLOCK", "CREATE USER `we ird`@`h`` x` ACCOUNT UNLOCK"},
	} {
		if got := WithoutAuthentication(c.in); got != c.want {
			t.Errorf("WithoutAuthentication(%q)\n = %q\nwant %q", c.in, got, c.want)
		}
		u, err := unusableCreate(c.in)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(u, "*B69027D4") || strings.Contains(u, "*7B9EBEED") || strings.Contains(u, "unix_socket") {
			t.Errorf("unusableCreate(%q) = %q keeps the source's authentication", c.in, u)
		}
		name := createUserRe.FindString(c.want)
		if !strings.HasPrefix(u, name+" IDENTIFIED BY '") || !strings.HasSuffix(u, c.want[len(name):]) {
			t.Errorf("unusableCreate(%q) = %q, want %s IDENTIFIED BY '<random>'%s", c.in, u, name, c.want[len(name):])
		}
	}
}

func TestWithoutAuthenticationGrants(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"GRANT USAGE ON *.* TO `app`@`%` IDENTIFIED BY PASSWORD '*B69027D44F6E5EDC07F1AEAD1477967B16F28227'", "GRANT USAGE ON *.* TO `app`@`%`"},
		{"GRANT ALL PRIVILEGES ON *.* TO `x`@`%` IDENTIFIED BY PASSWORD '*B69027D44F6E5EDC07F1AEAD1477967B16F28227' WITH GRANT OPTION", "GRANT ALL PRIVILEGES ON *.* TO `x`@`%` WITH GRANT OPTION"},
		{"GRANT SELECT ON `app`.* TO `x`@`%`", "GRANT SELECT ON `app`.* TO `x`@`%`"},
	} {
		if got := WithoutAuthentication(c.in); got != c.want {
			t.Errorf("WithoutAuthentication(%q)\n = %q\nwant %q", c.in, got, c.want)
		}
	}
}
