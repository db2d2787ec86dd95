package cow

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/pristinedb/pristine/internal/rootdir"
	"golang.org/x/sys/unix"
)

// benchScale is PRISTINE_BENCH_SCALE, which multiplies the sizes of the
// files in the benchmark tree (1 when unset).
func benchScale() int64 {
	if s, err := strconv.ParseInt(os.Getenv("PRISTINE_BENCH_SCALE"), 10, 64); err == nil && s > 0 {
		return s
	}
	return 1
}

// benchFS makes a filesystem large enough for the benchmark tree and a clone.
func benchFS(b *testing.B, kind string) *rootdir.Root {
	return loopFS(b, kind, 512+384*benchScale())
}

// benchTree fills dir with a tree shaped like a small MariaDB data
// directory: 673 files in 20 schema directories, a 12 MiB ibdata1, a 96 MiB
// redo log and 670 tablespaces of 96 KiB (about 170 MiB in all).
// PRISTINE_BENCH_SCALE multiplies the sizes of the files.
func benchTree(b *testing.B, dir string) {
	b.Helper()
	scale := benchScale()
	write := func(p string, size int64) {
		f, err := os.Create(filepath.Join(dir, p))
		if err != nil {
			b.Fatal(err)
		}
		buf := make([]byte, 64<<10)
		for i := range buf {
			buf[i] = byte(i * 7)
		}
		for off := int64(0); off < size; off += int64(len(buf)) {
			if _, err := f.Write(buf[:min(int64(len(buf)), size-off)]); err != nil {
				f.Close()
				b.Fatal(err)
			}
		}
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
	}
	write("ibdata1", 12<<20*scale)
	write("ib_logfile0", 96<<20*scale)
	write("aria_log_control", 52)
	for i := range 670 {
		db := fmt.Sprintf("db%02d", i%20)
		if err := os.MkdirAll(filepath.Join(dir, db), 0o750); err != nil {
			b.Fatal(err)
		}
		write(filepath.Join(db, fmt.Sprintf("t%03d.ibd", i)), 96<<10*scale)
	}
	unix.Sync()
}

// benchClone measures Clone of the benchmark tree, removing each clone
// outside the timer.
func benchClone(b *testing.B, root *rootdir.Root, be Backend) {
	src := filepath.Join(root.Data(), "template")
	if err := be.MakeDir(src); err != nil {
		b.Fatal(err)
	}
	benchTree(b, src)
	dst := filepath.Join(root.Data(), "slot")
	// One clone before timing: the first one after fresh writes pays for
	// their writeback.
	if err := be.Clone(src, dst); err != nil {
		b.Fatal(err)
	}
	if err := be.Remove(dst); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		if err := be.Clone(src, dst); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if err := be.Remove(dst); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

func BenchmarkClone(b *testing.B) {
	for _, c := range backendCases {
		if c.fs == "dir" {
			continue // the copy backend is measured in RAM already
		}
		b.Run(c.name, func(b *testing.B) {
			root := benchFS(b, c.fs)
			benchClone(b, root, c.make(root))
		})
	}
}

// BenchmarkCloneWorkers measures the reflink backend on XFS with different
// numbers of files cloned at once.
func BenchmarkCloneWorkers(b *testing.B) {
	root := benchFS(b, "xfs")
	be := NewReflink(root)
	for _, w := range []int{1, 2, 4, 8, 16} {
		b.Run(strconv.Itoa(w), func(b *testing.B) {
			old := workers
			workers = w
			defer func() { workers = old }()
			if err := os.RemoveAll(filepath.Join(root.Data(), "template")); err != nil {
				b.Fatal(err)
			}
			benchClone(b, root, be)
		})
	}
}

// BenchmarkRemove measures Remove of a clone of the benchmark tree.
func BenchmarkRemove(b *testing.B) {
	for _, c := range backendCases[:3] {
		b.Run(c.name, func(b *testing.B) {
			root := benchFS(b, c.fs)
			be := c.make(root)
			src := filepath.Join(root.Data(), "template")
			if err := be.MakeDir(src); err != nil {
				b.Fatal(err)
			}
			benchTree(b, src)
			dst := filepath.Join(root.Data(), "slot")
			for range b.N {
				b.StopTimer()
				if err := be.Clone(src, dst); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				if err := be.Remove(dst); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
