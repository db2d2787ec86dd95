package mariadb_test

import (
	"bytes"
	"os"
	"strconv"
	"testing"

	"github.com/pristinedb/pristine/internal/mariadb/mariadbtest"
)

// A server runs with the malloc settings that keep a slot small: one arena
// and a fixed trim threshold (docs/benchmarks.md, "Where a slot's start
// goes"). They are read from the running server's environment, where glibc
// reads them.
func TestServerMallocEnvironment(t *testing.T) {
	in := mariadbtest.Start(t)
	env, err := os.ReadFile("/proc/" + strconv.Itoa(in.PID()) + "/environ")
	if err != nil {
		t.Fatal(err)
	}
	vars := bytes.Split(env, []byte{0})
	for _, want := range []string{"MALLOC_ARENA_MAX=1", "MALLOC_TRIM_THRESHOLD_=131072", "MALLOC_TOP_PAD_=65536"} {
		found := 0
		for _, v := range vars {
			if name, _, _ := bytes.Cut(v, []byte("=")); bytes.HasPrefix([]byte(want), append(name, '=')) {
				found++
				if string(v) != want {
					t.Errorf("server environment has %s, want %s", v, want)
				}
			}
		}
		if found != 1 {
			t.Errorf("server environment has %s %d times, want once", want, found)
		}
	}
}
