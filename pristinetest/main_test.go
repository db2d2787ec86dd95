package pristinetest_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// bin is the pristine binary the tests' daemons run: $PRISTINE_BIN, or
// one built from this checkout.
var bin string

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		os.Exit(m.Run()) // a child process of a test: no daemon of its own
	}
	if bin = os.Getenv("PRISTINE_BIN"); bin != "" {
		os.Exit(m.Run()) // a binary built already (scripts/test.sh)
	}
	dir, err := os.MkdirTemp("", "pristinetest-bin-")
	if err != nil {
		panic(err)
	}
	bin = filepath.Join(dir, "pristine")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/pristinedb/pristine/cmd/pristine").CombinedOutput(); err != nil {
		os.Stderr.Write(out)
		panic(err)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
