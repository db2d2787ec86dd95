package pool

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A caller asking for a pool's status in a loop does not make the daemon
// walk the pool's files per request: within diskCacheFor the last measure
// is returned, after it a new one.
func TestDiskUseIsMeasuredAtMostEvery5s(t *testing.T) {
	p := &Pool{dir: t.TempDir()}
	write := func(name string, n int) {
		if err := os.WriteFile(filepath.Join(p.dir, name), make([]byte, n), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("a", 8192)
	first := p.DiskUse()
	write("b", 1<<20)
	if again := p.DiskUse(); again.SlotsLogical != first.SlotsLogical {
		t.Errorf("a second status within %s walked the files again: %d logical bytes, then %d", diskCacheFor, first.SlotsLogical, again.SlotsLogical)
	}
	p.disk.at = time.Now().Add(-diskCacheFor - time.Second)
	if later := p.DiskUse(); later.SlotsLogical <= first.SlotsLogical {
		t.Errorf("a status after %s: %d logical bytes; want the new file counted (more than %d)", diskCacheFor, later.SlotsLogical, first.SlotsLogical)
	}
}
