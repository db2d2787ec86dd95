package cow

import (
	"errors"
	"os"
	"strings"
	"testing"
)

func TestDetect(t *testing.T) {
	for _, c := range []struct {
		fs   string
		want string
	}{
		{"btrfs", "btrfs"},
		{"xfs", "reflink"},
		{"xfs-noreflink", "copy"},
		{"ext4", "copy"},
		{"tmpfs", "copy"},
	} {
		t.Run(c.fs, func(t *testing.T) {
			root := loopFS(t, c.fs, 320)
			b, err := Detect(root, root.Data())
			if err != nil {
				t.Fatalf("Detect: %v", err)
			}
			if b.Name() != c.want {
				t.Errorf("Detect on %s = %s; want %s", c.fs, b.Name(), c.want)
			}
			if ents, err := os.ReadDir(root.Data()); err != nil || len(ents) != 0 {
				t.Errorf("Detect left %d entries in the data directory (%v)", len(ents), err)
			}
		})
	}
}

func TestByName(t *testing.T) {
	for _, c := range []struct {
		fs, name string
		want     string // backend name, or a piece of the error
	}{
		{"xfs", "auto", "reflink"},
		{"xfs", "reflink", "reflink"},
		{"xfs", "copy", "copy"},
		{"btrfs", "btrfs", "btrfs"},
		{"btrfs", "reflink", "reflink"},
		{"ext4", "reflink", `is on ext4, which cannot reflink; use --backend copy, or run "pristine scratch up"`},
		{"xfs-noreflink", "reflink", "xfs made without reflink (mkfs.xfs -m reflink=0)"},
		{"xfs", "btrfs", "is on xfs, not btrfs"},
		{"tmpfs", "zfs", `backend "zfs": unknown`},
	} {
		t.Run(c.fs+"/"+c.name, func(t *testing.T) {
			root := loopFS(t, c.fs, 320)
			b, err := ByName(root, c.name, root.Data())
			if err != nil {
				if !strings.Contains(err.Error(), c.want) {
					t.Errorf("ByName: %v; want an error containing %q", err, c.want)
				}
				if c.name != "zfs" && !errors.Is(err, ErrUnsupported) {
					t.Errorf("ByName: %v; want ErrUnsupported", err)
				}
				return
			}
			if b.Name() != c.want {
				t.Errorf("ByName(%s) on %s = %s; want %s", c.name, c.fs, b.Name(), c.want)
			}
		})
	}
}

func TestDetectRefusesOutsideRoot(t *testing.T) {
	root := loopFS(t, "tmpfs", 8)
	if _, err := Detect(root, t.TempDir()); err == nil {
		t.Error("Detect on a directory outside the root succeeded; want an error")
	}
}

func TestDetectCreatesMissingDir(t *testing.T) {
	root := loopFS(t, "tmpfs", 8)
	if err := os.Remove(root.Data()); err != nil {
		t.Fatal(err)
	}
	b, err := Detect(root, root.Data())
	if err != nil || b.Name() != "copy" {
		t.Fatalf("Detect on a missing data dir: %v, %v; want copy", b, err)
	}
	if st, err := os.Stat(root.Data()); err != nil || !st.IsDir() {
		t.Errorf("data dir not created: %v", err)
	}
}
