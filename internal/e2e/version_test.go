package e2e

import (
	"os/exec"
	"runtime"
	"strings"
	"testing"
)

// TestVersion: --version names pristine's version and commit, the Go that
// built it and the server pristine would start.
func TestVersion(t *testing.T) {
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("pristine --version: %v\n%s", err, out)
	}
	s := string(out)
	for _, want := range []string{"pristine ", "commit ", runtime.Version(), "server: /", "MariaDB"} {
		if !strings.Contains(s, want) {
			t.Errorf("pristine --version printed %q, want it to contain %q", s, want)
		}
	}
}
