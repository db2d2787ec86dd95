package pool_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/pristinedb/pristine/internal/cow"
	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/pool"
	"github.com/pristinedb/pristine/internal/template"
	"github.com/pristinedb/pristine/internal/template/templatetest"
)

// One lease fills its slot with a LONGBLOB doubling loop on a scratch
// filesystem: at its slot's cap its statement is stopped and its writes
// fail, long before the filesystem is full, while a lease on another slot
// still writes. No other slot or lease is lost; the full slot is reset on
// release and serves again.
func TestSlotDiskCap(t *testing.T) {
	for _, fs := range []string{"btrfs", "xfs", "copy"} {
		t.Run(fs, func(t *testing.T) {
			var st *template.Builder
			if fs == "copy" {
				st = templatetest.NewBuilder(t, "copy")
			} else {
				st = templatetest.NewScratchBuilder(t, fs, 1<<30)
			}
			m := templatetest.Build(t, st, "app", schema, template.BuildOptions{})
			const capBytes = 100 << 20
			var logs syncBuffer
			p, err := pool.Up(context.Background(), st.Catalog(), st.Binary(), m, pool.Options{Size: 2, Profile: mariadb.DefaultProfile(), SlotDisk: capBytes,
				Log: slog.New(slog.NewTextHandler(&logs, nil))})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Down(context.Background())
			t.Logf("disk cap on %s: %s", fs, p.Status(false).DiskCap)
			ctx := context.Background()
			hog, other := lease(t, p), lease(t, p)
			db := open(t, hog)
			for _, q := range []string{"CREATE TABLE blobs (b LONGBLOB) ENGINE=InnoDB", "INSERT INTO blobs VALUES (REPEAT(SHA2(RAND(), 512), 8192))"} {
				if _, err := db.Exec(q); err != nil {
					t.Fatal(err)
				}
			}
			var fillErr error
			for i := 0; i < 40 && fillErr == nil; i++ {
				_, fillErr = db.Exec("INSERT INTO blobs SELECT CONCAT(b, i) FROM blobs, (SELECT 1 AS i) x")
			}
			if fillErr == nil {
				t.Fatal("a lease wrote 2^40 blobs without reaching its slot's cap")
			}
			t.Logf("the filling lease stopped with: %v", fillErr)
			// Its next write fails too, and says why. The watch makes the
			// server read-only, then stops its holder's statements: a write
			// that starts before the stop reaches it is interrupted (1317)
			// instead, and the one after it meets read_only.
			for try := 0; ; try++ {
				_, err = db.Exec("INSERT INTO canary VALUES (9, 'more')")
				if try < 3 && err != nil && strings.Contains(err.Error(), "Error 1317") {
					continue
				}
				if err == nil || !strings.Contains(err.Error(), "read-only") {
					t.Errorf("a write after the cap: %v, want the read-only error", err)
				}
				break
			}
			// The other slot still writes.
			if _, err := open(t, other).Exec("INSERT INTO canary VALUES (3, 'still writes')"); err != nil {
				t.Fatalf("a lease on another slot cannot write while one slot is full: %v", err)
			}
			status := p.Status(true)
			if status.Leased != 2 || len(status.Stats.LeasesLost) != 0 || status.Stats.OverCap != 1 {
				t.Errorf("after one slot filled up: %d leases held (want 2), lost %v (want none), over cap %d (want 1)", status.Leased, status.Stats.LeasesLost, status.Stats.OverCap)
			}
			if !strings.Contains(logs.String(), `msg="slot over its disk cap`) {
				t.Errorf("the log does not say the slot went over its cap:\n%s", logs.String())
			}
			if _, err := p.Release(ctx, hog.ID, pool.Dirty); err != nil {
				t.Fatal(err)
			}
			again := lease(t, p)
			if again.Slot != hog.Slot {
				t.Fatalf("after the reset got slot %d, want %d", again.Slot, hog.Slot)
			}
			if _, err := open(t, again).Exec("INSERT INTO canary VALUES (3, 'after reset')"); err != nil {
				t.Fatalf("the reset slot does not write: %v", err)
			}
		})
	}
}

// The filesystem's cap behind the watched one: on a btrfs scratch, a
// clone capped at 64 MiB takes no more; past it writes fail with EDQUOT.
func TestBtrfsHardCap(t *testing.T) {
	st := templatetest.NewScratchBuilder(t, "btrfs", 1<<30)
	c, ok := st.Catalog().Backend().(cow.Capper)
	if !ok {
		t.Fatalf("the btrfs backend cannot cap")
	}
	src, dst := filepath.Join(st.Catalog().Root().Data(), "src"), filepath.Join(st.Catalog().Root().Data(), "dst")
	if err := st.Catalog().Backend().MakeDir(src); err != nil {
		t.Fatal(err)
	}
	// A shared file does not count against the clone's cap.
	if err := os.WriteFile(filepath.Join(src, "shared"), make([]byte, 100<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := st.Catalog().Backend().Clone(src, dst); err != nil {
		t.Fatal(err)
	}
	defer st.Catalog().Backend().Remove(dst)
	defer st.Catalog().Backend().Remove(src)
	if err := c.Cap(dst, 64<<20); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dst, "fill"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 1<<20)
	var written int64
	for written < 200<<20 {
		if _, err = f.Write(chunk); err == nil {
			err = f.Sync()
		}
		if err != nil {
			break
		}
		written += int64(len(chunk))
	}
	if !errors.Is(err, syscall.EDQUOT) {
		t.Fatalf("writing 200 MiB into a clone capped at 64 MiB: %v after %d MiB, want EDQUOT", err, written>>20)
	}
	if written > 64<<20 || written < 32<<20 {
		t.Fatalf("the capped clone took %d MiB, want about 64", written>>20)
	}
}
