package pool_test

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/pristinedb/pristine/internal/cow"
	"github.com/pristinedb/pristine/internal/demo"
	"github.com/pristinedb/pristine/internal/template"
	"github.com/pristinedb/pristine/internal/template/templatetest"
)

// TestMeasureCloneOwner measures what giving a slot's clone to its server
// id costs (docs/security.md, "One slot, one uid"): a clone of the demo
// template with its owners kept (Clone) against one given to another id
// (cow.CloneAs), alternated, on btrfs (a snapshot, then a chown walk), XFS
// (reflink: the owner is set as each file is made, by the fchown every
// clone made as root does anyway) and copy; and, on each, the chown walk
// alone on a fresh clone (what a btrfs snapshot pays, cow.Owner.ChownTree);
// and on btrfs a clone from a slot's seed (Pool.seed), what a slot's
// reset pays there. It only reports;
// set PRISTINE_MEASURE_CHOWN=1 to run it (as root).
func TestMeasureCloneOwner(t *testing.T) {
	if os.Getenv("PRISTINE_MEASURE_CHOWN") == "" {
		t.Skip("a measurement: set PRISTINE_MEASURE_CHOWN=1 to run it")
	}
	needRoot(t)
	var sqlText bytes.Buffer
	if err := demo.Write(&sqlText, demo.Options{Scale: 1}); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"btrfs", "xfs", "copy"} {
		t.Run(kind, func(t *testing.T) {
			var st *template.Builder
			if kind == "copy" {
				st = templatetest.NewBuilder(t, "copy")
			} else {
				st = templatetest.NewScratchBuilder(t, kind, 2<<30)
			}
			m := templatetest.Build(t, st, "demo", sqlText.String(), template.BuildOptions{})
			src := st.Catalog().DataDir(m.Hash)
			files := 0
			_ = filepath.WalkDir(src, func(string, fs.DirEntry, error) error { files++; return nil })
			be := st.Catalog().Backend()
			const rounds = 16
			times := map[bool][]time.Duration{}
			var walks []time.Duration
			for r := 0; r < rounds; r++ {
				dst := filepath.Join(st.Catalog().Root().Data(), fmt.Sprintf("measure-walk-%d", r))
				if err := be.Clone(src, dst); err != nil {
					t.Fatal(err)
				}
				own := &cow.Owner{UID: 0x70000000 + 4242, GID: 0x70000000 + 4242}
				start := time.Now()
				if err := own.ChownTree(dst); err != nil {
					t.Fatal(err)
				}
				walks = append(walks, time.Since(start))
				if err := be.Remove(dst); err != nil {
					t.Fatal(err)
				}
			}
			// Clone and remove in blocks of 5, plain and owned in turn, and
			// count the removal too: a snapshot's chown dirties metadata
			// that the next commit (the removal's, the next snapshot's)
			// writes, which the walk alone does not show.
			for r := 0; r < rounds; r++ {
				owned := r%2 == 1
				var own *cow.Owner
				if owned {
					own = &cow.Owner{UID: 0x70000000 + 4242, GID: 0x70000000 + 4242}
				}
				start := time.Now()
				for k := 0; k < 5; k++ {
					dst := filepath.Join(st.Catalog().Root().Data(), fmt.Sprintf("measure-%d-%d", r, k))
					if err := cow.CloneAs(be, src, dst, own); err != nil {
						t.Fatal(err)
					}
					if err := be.Remove(dst); err != nil {
						t.Fatal(err)
					}
				}
				times[owned] = append(times[owned], time.Since(start)/5)
			}
			// What a slot pays on btrfs: its seed, given to its id once,
			// then a plain snapshot of the seed per clone (Pool.seed).
			var seeded []time.Duration
			if kind == "btrfs" {
				seed := filepath.Join(st.Catalog().Root().Data(), "measure-seed")
				if err := cow.CloneAs(be, src, seed, &cow.Owner{UID: 0x70000000 + 4242, GID: 0x70000000 + 4242}); err != nil {
					t.Fatal(err)
				}
				for r := 0; r < rounds/2; r++ {
					start := time.Now()
					for k := 0; k < 5; k++ {
						dst := filepath.Join(st.Catalog().Root().Data(), fmt.Sprintf("measure-seeded-%d-%d", r, k))
						if err := be.Clone(seed, dst); err != nil {
							t.Fatal(err)
						}
						if err := be.Remove(dst); err != nil {
							t.Fatal(err)
						}
					}
					seeded = append(seeded, time.Since(start)/5)
				}
				if err := be.Remove(seed); err != nil {
					t.Fatal(err)
				}
			}
			med := func(d []time.Duration) time.Duration {
				sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
				return d[len(d)/2]
			}
			a, b := med(times[false]), med(times[true])
			t.Logf("%s, demo template (%d entries, %d MiB): clone and remove, keeping owners %v, given to a slot id %v (median of %d blocks of 5); the chown walk alone %v (median of %d)",
				kind, files, m.Bytes>>20, a, b, (rounds+1)/2, med(walks), rounds)
			if len(seeded) > 0 {
				t.Logf("%s: clone and remove from a slot's seed (already the slot id's) %v (median of %d blocks of 5)", kind, med(seeded), len(seeded))
			}
		})
	}
}
