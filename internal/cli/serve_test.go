package cli

import (
	"testing"

	"github.com/pristinedb/pristine/internal/sysmem"
	"golang.org/x/sys/unix"
)

// TestServeBudgetDefaults: a daemon started without --max-memory and
// --max-disk still has a budget, 3/4 of the machine's memory and of the
// size of the filesystem holding the root's data; a size sets it and
// "none" leaves only the machine's limits.
func TestServeBudgetDefaults(t *testing.T) {
	dir := t.TempDir()
	total, err := sysmem.Total()
	if err != nil {
		t.Skipf("no MemTotal here: %v", err)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	size := int64(st.Blocks) * st.Bsize
	for _, c := range []struct {
		memory, disk string
		wantM, wantD int64
	}{
		{"", "", total / 4 * 3, size / 4 * 3},
		{"16G", "50G", 16 << 30, 50 << 30},
		{"none", "none", 0, 0},
		{"2G", "", 2 << 30, size / 4 * 3},
	} {
		b, err := serveBudget(ServeFlags{MaxMemory: c.memory, MaxDisk: c.disk}, dir)
		if err != nil || b.Memory != c.wantM || b.Disk != c.wantD {
			t.Errorf("--max-memory %q --max-disk %q: %+v %v, want memory %d and disk %d", c.memory, c.disk, b, err, c.wantM, c.wantD)
		}
	}
	if _, err := serveBudget(ServeFlags{MaxMemory: "lots"}, dir); err == nil {
		t.Errorf("--max-memory lots: no error")
	}
}
