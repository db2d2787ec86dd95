package pool

import (
	"testing"

	"github.com/pristinedb/pristine/internal/catalog"
	"github.com/pristinedb/pristine/internal/cow"
	"github.com/pristinedb/pristine/internal/mariadb"
)

// TestSlotCostByFlavor checks that a slot's projected memory is its own
// server's: a pool of MySQL slots projected with MariaDB's figure came up
// until the kernel killed one for memory.
func TestSlotCostByFlavor(t *testing.T) {
	prof := mariadb.DefaultProfile()
	for _, c := range []struct {
		flavor string
		want   int64 // memory of one slot
	}{
		{"mariadb", 40<<20 + prof.BufferPool},
		{"", 40<<20 + prof.BufferPool}, // a template from before the flavour was kept: MariaDB's
		{"mysql", 120<<20 + prof.BufferPool},
	} {
		mem, disk := SlotCost(cow.NewCopy(nil), &catalog.Meta{Flavor: c.flavor, Bytes: 1 << 20}, prof)
		if mem != c.want || disk != slotDiskWrite+1<<20 {
			t.Errorf("flavor %q: a slot costs %d memory, %d disk; want %d, %d", c.flavor, mem, disk, c.want, slotDiskWrite+1<<20)
		}
	}
	// 200 MySQL slots do not fit in the 23.5 GiB that 187 of them filled.
	mem, _ := SlotCost(cow.NewCopy(nil), &catalog.Meta{Flavor: "mysql"}, prof)
	if need := 200 * mem; need < 235<<30/10 {
		t.Errorf("200 MySQL slots project %d MiB; want more than the 23.5 GiB 187 of them filled", need>>20)
	}
}
