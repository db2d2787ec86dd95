package demorun

import (
	"strings"
	"testing"
)

// TestWriteTextNamesTheServer: the demo's text names the server family
// and its dump|load baseline from the run's version string alone.
func TestWriteTextNamesTheServer(t *testing.T) {
	for _, tc := range []struct{ server, name, baseline string }{
		{"10.11.19-MariaDB-0+deb12u1", "MariaDB", "mariadb-dump \\| mariadb"},
		{"11.8.3-MariaDB-ubu2404", "MariaDB", "mariadb-dump \\| mariadb"},
		{"9.7.0", "MySQL", "mysqldump \\| mysql"},
	} {
		var b strings.Builder
		WriteText(&b, &DemoResult{Server: tc.server, Backend: "btrfs", Slots: 200})
		out := b.String()
		if !strings.Contains(out, "pristine demo: "+tc.name+" "+tc.server+",") || !strings.Contains(out, "| "+tc.baseline+" |") {
			t.Errorf("%s: the text does not name %s and %q:\n%s", tc.server, tc.name, tc.baseline, out)
		}
	}
}
