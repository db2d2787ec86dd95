package mariadb

import (
	"os"
	"strings"
	"testing"
)

// TestLiveThreads: a stop that times out names the server's threads; here
// the test's own process stands in for the server, and a process that is
// gone says so.
func TestLiveThreads(t *testing.T) {
	got := liveThreads(os.Getpid())
	comm, err := os.ReadFile("/proc/self/comm")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	if !strings.HasPrefix(got, strings.TrimSpace(string(comm))) {
		t.Errorf("liveThreads(self) = %q, want threads named %q", got, strings.TrimSpace(string(comm)))
	}
	if got := liveThreads(1 << 30); !strings.HasPrefix(got, "unknown: ") {
		t.Errorf("liveThreads(no such process) = %q, want unknown: ...", got)
	}
}
