package demorun

import (
	"os"
	"testing"
)

// procStartSec reads this process's start from /proc, which is before now
// and after boot; a pid that does not exist reads as not ok.
func TestProcStartSec(t *testing.T) {
	st, ok := procStartSec(os.Getpid())
	up := uptimeSec()
	if !ok || st <= 0 || up <= 0 || st > up {
		t.Fatalf("procStartSec(self) = %v, %v; uptime %v: want 0 < start <= uptime", st, ok, up)
	}
	if _, ok := procStartSec(1 << 30); ok {
		t.Error("procStartSec of a pid that does not exist: ok, want not ok")
	}
}
