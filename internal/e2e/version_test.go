package e2e

import (
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"github.com/pristinedb/pristine/internal/mariadb/mariadbtest"
)

// TestVersion: --version names pristine's version and commit, the Go that
// built it and the server pristine would start, with that server's own
// version (MariaDB's says MariaDB; MySQL's is its number alone).
func TestVersion(t *testing.T) {
	srv := mariadbtest.Binary(t)
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("pristine --version: %v\n%s", err, out)
	}
	s := string(out)
	for _, want := range []string{"pristine ", "commit ", runtime.Version(), "server: " + srv.Path + " " + srv.Version} {
		if !strings.Contains(s, want) {
			t.Errorf("pristine --version printed %q, want it to contain %q", s, want)
		}
	}
}
