package scripts

import (
	"os"
	"strings"
	"testing"
)

// TestImageRunsDocumented: the three ways docs/packaging.md runs the
// container image are the ones scripts/test-image.sh tests, with the same
// options, and the entrypoint reads the variable both name.
func TestImageRunsDocumented(t *testing.T) {
	read := func(path string) string {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	doc, test := read("../docs/packaging.md"), read("test-image.sh")
	entry := read("../packaging/container/entrypoint.sh")
	for _, opt := range []string{
		"--privileged",
		"PRISTINE_SCRATCH=",
		"--shm-size=",
		"-v /var/lib/pristine-ids:/var/lib/pristine-ids",
		":/var/lib/pristine",
	} {
		if !strings.Contains(doc, opt) || !strings.Contains(test, opt) {
			t.Errorf("%q is not in both docs/packaging.md and scripts/test-image.sh", opt)
		}
	}
	for _, run := range []string{"run privileged", "run xfs-volume", "run overlay"} {
		if !strings.Contains(test, "\n"+run) {
			t.Errorf("scripts/test-image.sh does not %s", run)
		}
	}
	if !strings.Contains(entry, "PRISTINE_SCRATCH") || !strings.Contains(entry, "pristine scratch down") {
		t.Error("the entrypoint does not make and take down the scratch of PRISTINE_SCRATCH")
	}
}
