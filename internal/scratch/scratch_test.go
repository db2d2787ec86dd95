package scratch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pristinedb/pristine/internal/cow"
	"github.com/pristinedb/pristine/internal/diskuse"
	"github.com/pristinedb/pristine/internal/mountinfo"
	"github.com/pristinedb/pristine/internal/rootdir"
	"golang.org/x/sys/unix"
)

// needRootAnd skips the test unless it runs as root with the tools given.
func needRootAnd(t *testing.T, tools ...string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("scratch mounts loop filesystems, which needs root; run the tests as root to cover it")
	}
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
}

// newRoot opens a fresh root and makes sure, when the test ends, that its
// scratch filesystem is gone whatever happened.
func newRoot(t *testing.T) *rootdir.Root {
	t.Helper()
	root, err := rootdir.Open(filepath.Join(t.TempDir(), "root"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if m, _ := mountinfo.At(root.Data()); m != nil {
			unix.Unmount(root.Data(), unix.MNT_DETACH)
		}
		for _, dir := range []string{"/dev/shm"} {
			img := imagePath(root, dir)
			detachLoops(img)
			os.Remove(img)
		}
	})
	return root
}

// tmpfsDir mounts a tmpfs of the given size in MiB for images to live in.
func tmpfsDir(t *testing.T, mib int) string {
	t.Helper()
	dir := t.TempDir()
	if err := unix.Mount("pristine-test", dir, "tmpfs", 0, fmt.Sprintf("size=%dm", mib)); err != nil {
		t.Fatalf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() {
		err := unix.Unmount(dir, 0)
		if errors.Is(err, unix.EBUSY) && heldLoopUnder(dir) {
			// Its image's loop device is left to autoclear (assertGone
			// logged why): the tmpfs goes once that lets the file go.
			err = unix.Unmount(dir, unix.MNT_DETACH)
		}
		if err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// heldLoopUnder reports whether a loop device bound to a file under dir
// has its filesystem mounted in another mount namespace.
func heldLoopUnder(dir string) bool {
	paths, _ := filepath.Glob("/sys/block/loop*/loop/backing_file")
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil || !strings.HasPrefix(string(b), dir+"/") {
			continue
		}
		if len(mountedElsewhere([]string{"/dev/" + filepath.Base(filepath.Dir(filepath.Dir(p)))})) > 0 {
			return true
		}
	}
	return false
}

// assertGone fails the test if anything of root's scratch filesystem remains.
func assertGone(t *testing.T, root *rootdir.Root, image string) {
	t.Helper()
	if m, err := mountinfo.At(root.Data()); err != nil || m != nil {
		t.Errorf("still mounted at %s: %+v (%v)", root.Data(), m, err)
	}
	if devs, err := loopsOf(image); err != nil || len(devs) > 0 {
		// A mount namespace made by something running beside the test
		// (a container build) holds a copy of the mount: the device is
		// left to autoclear, as Down's warning says.
		if hs := mountedElsewhere(devs); err == nil && len(hs) > 0 {
			t.Logf("loop devices %v stay bound to %s, held elsewhere: %s", devs, image, heldWarning(hs))
		} else {
			t.Errorf("loop devices still bound to %s: %v (%v)", image, devs, err)
		}
	}
	if _, err := os.Lstat(image); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("image %s still exists: %v", image, err)
	}
	if _, err := os.Lstat(filepath.Join(root.Path, recordName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s still exists: %v", recordName, err)
	}
}

func TestUpDown(t *testing.T) {
	for _, c := range []struct {
		fs, tool, backend, opt string
	}{
		{"btrfs", "mkfs.btrfs", "btrfs", "nodatasum"},
		{"xfs", "mkfs.xfs", "reflink", "discard"},
	} {
		t.Run(c.fs, func(t *testing.T) {
			needRootAnd(t, c.tool)
			ctx := context.Background()
			root := newRoot(t)
			opt := Options{Size: 512 << 20, FS: c.fs}
			info, err := Up(ctx, root, opt)
			if err != nil {
				t.Fatalf("Up: %v", err)
			}
			if !info.Up || info.FS != c.fs || info.Size != opt.Size || info.Image != "/dev/shm/pristine-"+root.ID()+".img" || info.Mount != root.Data() {
				t.Errorf("Up returned %+v", info)
			}
			m, err := mountinfo.At(root.Data())
			if err != nil || m == nil || m.FSType != c.fs {
				t.Fatalf("mount at %s: %+v, %v; want %s", root.Data(), m, err, c.fs)
			}
			if !strings.Contains(","+m.Options+",", ","+c.opt+",") {
				t.Errorf("mount options %q lack %s", m.Options, c.opt)
			}
			if info.ReadaheadKB != ReadaheadKB || !strings.HasSuffix(info.ReadaheadFile, "/read_ahead_kb") {
				t.Errorf("readahead of the scratch filesystem: %d KiB (%q); want %d", info.ReadaheadKB, info.ReadaheadFile, ReadaheadKB)
			}
			b, err := cow.Detect(root, root.Data())
			if err != nil || b.Name() != c.backend {
				t.Errorf("backend on the scratch filesystem: %v, %v; want %s", b, err, c.backend)
			}
			if err := os.WriteFile(filepath.Join(root.Data(), "f"), []byte("data"), 0o644); err != nil {
				t.Fatal(err)
			}

			again, err := Up(ctx, root, opt)
			if err != nil || !again.AlreadyUp {
				t.Errorf("second Up: %+v, %v; want AlreadyUp", again, err)
			}
			if _, err := Up(ctx, root, Options{Size: 1 << 30, FS: c.fs}); err == nil || !strings.Contains(err.Error(), "scratch down") {
				t.Errorf("Up with another size while up: %v; want an error saying to run scratch down", err)
			}

			if _, err := Down(ctx, root); err != nil {
				t.Fatalf("Down: %v", err)
			}
			assertGone(t, root, info.Image)
			if _, err := Down(ctx, root); err != nil {
				t.Errorf("second Down: %v; want nil", err)
			}
			if st, err := Status(root); err != nil || st.Up || st.Stale {
				t.Errorf("Status after Down: %+v, %v", st, err)
			}
		})
	}
}

func TestUpRefusesSizeThatDoesNotFit(t *testing.T) {
	needRootAnd(t, "mkfs.btrfs")
	root := newRoot(t)
	dir := tmpfsDir(t, 300)
	_, err := Up(context.Background(), root, Options{Size: 1 << 30, Dir: dir})
	want := "does not fit in " + dir + ", which has 300M free; use --size 300M or less"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Up of 1G in a 300M tmpfs: %v; want an error containing %q", err, want)
	}
	assertGone(t, root, imagePath(root, dir))
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("Up left %d files in %s", len(ents), dir)
	}
}

func TestUpRefusesBadDataDir(t *testing.T) {
	needRootAnd(t, "mkfs.btrfs")
	t.Run("not empty", func(t *testing.T) {
		root := newRoot(t)
		if err := os.MkdirAll(filepath.Join(root.Data(), "template", "t1"), 0o755); err != nil {
			t.Fatal(err)
		}
		// An empty directory a store left is no reason to refuse.
		if err := os.MkdirAll(filepath.Join(root.Data(), "pools"), 0o755); err != nil {
			t.Fatal(err)
		}
		_, err := Up(context.Background(), root, Options{Size: 512 << 20})
		if err == nil || !strings.Contains(err.Error(), "holds "+filepath.Join(root.Data(), "template")+" (") || !strings.Contains(err.Error(), "--move") {
			t.Errorf("Up over a non-empty data dir: %v", err)
		}
		if _, err := os.Stat(filepath.Join(root.Data(), "template")); err != nil {
			t.Errorf("existing data damaged: %v", err)
		}
		assertGone(t, root, imagePath(root, "/dev/shm"))
	})
	t.Run("foreign mount", func(t *testing.T) {
		root := newRoot(t)
		if err := os.Mkdir(root.Data(), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := unix.Mount("foreign", root.Data(), "tmpfs", 0, "size=1m"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Unmount(root.Data(), 0) })
		if _, err := Up(context.Background(), root, Options{Size: 512 << 20}); err == nil || !strings.Contains(err.Error(), "which pristine did not make") {
			t.Errorf("Up over a foreign mount: %v", err)
		}
		if _, err := Down(context.Background(), root); err == nil || !strings.Contains(err.Error(), "pristine leaves it alone") {
			t.Errorf("Down of a foreign mount: %v", err)
		}
		if m, _ := mountinfo.At(root.Data()); m == nil || m.Source != "foreign" {
			t.Errorf("the foreign mount is gone: %+v", m)
		}
	})
	t.Run("tampered record", func(t *testing.T) {
		root := newRoot(t)
		victim := filepath.Join(t.TempDir(), "victim.img")
		if err := os.WriteFile(victim, []byte("keep"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := writeRecord(root, &record{State: "up", FS: "btrfs", Dir: filepath.Dir(victim), Image: victim}); err != nil {
			t.Fatal(err)
		}
		if _, err := Down(context.Background(), root); err == nil || !strings.Contains(err.Error(), "not this root's") {
			t.Errorf("Down with a record naming another file: %v", err)
		}
		if _, err := os.Stat(victim); err != nil {
			t.Errorf("Down deleted a file it did not create: %v", err)
		}
	})
}

func TestDownBusy(t *testing.T) {
	needRootAnd(t, "mkfs.btrfs", "sleep")
	ctx := context.Background()
	root := newRoot(t)
	info, err := Up(ctx, root, Options{Size: 512 << 20})
	if err != nil {
		t.Fatalf("Up: %v", err)
	}
	sleeper := exec.Command("sleep", "60")
	sleeper.Dir = root.Data()
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sleeper.Process.Kill(); sleeper.Wait() })
	_, err = Down(ctx, root)
	pid := strconv.Itoa(sleeper.Process.Pid)
	if err == nil || !strings.Contains(err.Error(), "is busy: pids "+pid+" (sleep)") || !strings.Contains(err.Error(), "kill "+pid) {
		t.Fatalf("Down while a process works in it: %v; want it to name pid %s and how to stop it", err, pid)
	}
	if st, err := Status(root); err != nil || !st.Up {
		t.Errorf("Status after a refused Down: %+v, %v; want still up", st, err)
	}
	sleeper.Process.Kill()
	sleeper.Wait()
	if _, err := Down(ctx, root); err != nil {
		t.Fatalf("Down after the process ended: %v", err)
	}
	assertGone(t, root, info.Image)
}

// TestDownWithACopyInAnotherNamespace makes a mount namespace with private
// mounts while the scratch filesystem is up, as unshare does (and a
// container build, or ip netns exec where the host's mounts are private):
// its copy of the mount keeps the filesystem and the loop device after
// the unmount here. Down must finish what is its to do (the mount here,
// the image, the record), warn naming the process, where, and the fix,
// and leave the device to autoclear, which detaches it once that
// namespace is gone.
func TestDownWithACopyInAnotherNamespace(t *testing.T) {
	needRootAnd(t, "mkfs.xfs", "unshare", "sleep")
	ctx := context.Background()
	root := newRoot(t)
	info, err := Up(ctx, root, Options{Size: 300 << 20, FS: "xfs"})
	if err != nil {
		t.Fatalf("Up: %v", err)
	}
	devs, err := loopsOf(info.Image)
	if err != nil || len(devs) != 1 {
		t.Fatalf("loop devices of %s: %v, %v", info.Image, devs, err)
	}
	other := exec.Command("unshare", "--mount", "--propagation", "private", "sleep", "60")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Process.Kill(); other.Wait() })
	self, _ := os.Readlink("/proc/self/ns/mnt")
	pid := strconv.Itoa(other.Process.Pid)
	for i := 0; ; i++ { // unshare has made its namespace once it runs sleep
		ns, _ := os.Readlink("/proc/" + pid + "/ns/mnt")
		comm, _ := os.ReadFile("/proc/" + pid + "/comm")
		if ns != "" && ns != self && strings.TrimSpace(string(comm)) == "sleep" {
			break
		} else if i == 200 {
			t.Fatalf("unshare made no mount namespace in 2 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	rep, err := Down(ctx, root)
	if err != nil {
		t.Fatalf("Down with a copy of the mount in another namespace: %v; want it done, with a warning", err)
	}
	// Namespaces made beside the test hold copies too: the warning names
	// each, and the fix for the first.
	if !strings.Contains(rep.Warning, pid+" (sleep) at "+root.Data()) || !regexp.MustCompile(`nsenter -t [0-9]+ -m umount `+regexp.QuoteMeta(root.Data())).MatchString(rep.Warning) {
		t.Fatalf("Down's warning: %q; want it to name pid %s, where, and the fix", rep.Warning, pid)
	}
	if m, err := mountinfo.At(root.Data()); err != nil || m != nil {
		t.Errorf("still mounted here: %+v (%v)", m, err)
	}
	if _, err := os.Lstat(info.Image); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("image %s still exists: %v", info.Image, err)
	}
	if st, err := Status(root); err != nil || st.Image != "" {
		t.Errorf("Status after that Down: %+v, %v; want nothing recorded", st, err)
	}
	if now, _ := loopsOf(info.Image); len(now) != 1 {
		t.Errorf("loop devices of the deleted image while the copy lives: %v, want %v still bound", now, devs)
	}
	other.Process.Kill()
	other.Wait()
	for i := 0; ; i++ {
		if now, err := loopsOf(info.Image); err == nil && len(now) == 0 {
			break
		} else if i == 400 {
			t.Fatalf("loop devices of the deleted image 10 s after the copy's namespace went: %v (%v); want autoclear to have detached them", now, err)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// TestStaleRecord simulates a crash after the image was made: Status reports
// it stale and Down removes the image.
func TestStaleRecord(t *testing.T) {
	needRootAnd(t, "mkfs.btrfs")
	ctx := context.Background()
	root := newRoot(t)
	info, err := Up(ctx, root, Options{Size: 512 << 20})
	if err != nil {
		t.Fatalf("Up: %v", err)
	}
	if err := unix.Unmount(root.Data(), 0); err != nil {
		t.Fatal(err)
	}
	st, err := Status(root)
	if err != nil || st.Up || !st.Stale {
		t.Errorf("Status of an unmounted scratch: %+v, %v; want stale", st, err)
	}
	again, err := Up(ctx, root, Options{Size: 512 << 20})
	if err != nil || !again.Up || again.AlreadyUp {
		t.Fatalf("Up over a stale record: %+v, %v; want a fresh filesystem", again, err)
	}
	if _, err := Down(ctx, root); err != nil {
		t.Fatalf("Down: %v", err)
	}
	assertGone(t, root, info.Image)
}

func TestFormatSize(t *testing.T) {
	for n, want := range map[int64]string{8 << 30: "8G", 3 << 29: "1.5G", 100: "100B", 300 << 20: "300M"} {
		if got := FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %s; want %s", n, got, want)
		}
	}
}

// TestFullImageDir fills the directory that holds the image while the
// scratch filesystem is up: Status warns with the fix, a write inside fails
// with ENOSPC, and Down still removes everything.
func TestFullImageDir(t *testing.T) {
	needRootAnd(t, "mkfs.xfs")
	ctx := context.Background()
	root := newRoot(t)
	dir := tmpfsDir(t, 400)
	info, err := Up(ctx, root, Options{Size: 390 << 20, FS: "xfs", Dir: dir})
	if err != nil {
		t.Fatalf("Up: %v", err)
	}
	t.Cleanup(func() { Down(ctx, root) })
	filler, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 1<<20)
	for range 340 {
		if _, err := filler.Write(chunk); err != nil {
			break
		}
	}
	filler.Close()
	st, err := Status(root)
	if err != nil || !strings.Contains(st.Warning, "writes may fail") || !strings.Contains(st.Warning, "free space in "+dir) {
		t.Errorf("Status with a full image dir: warning %q, %v; want the cause and the fix", st.Warning, err)
	}
	f, err := os.Create(filepath.Join(root.Data(), "big"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range chunk {
		chunk[i] = byte(i * 31)
	}
	for range 200 {
		if _, err = f.Write(chunk); err != nil {
			break
		}
	}
	if err == nil {
		err = f.Sync()
	}
	f.Close()
	if !errors.Is(err, unix.ENOSPC) && !errors.Is(err, unix.EIO) {
		t.Errorf("writing 200M into the scratch filesystem with 60M left under it: %v; want ENOSPC or EIO", err)
	}
	if _, err := Down(ctx, root); err != nil {
		t.Fatalf("Down: %v", err)
	}
	assertGone(t, root, info.Image)
}

// TestUpFailureLeavesNothing makes mkfs fail, and then succeed without
// writing a filesystem so that the mount fails, through stand-in mkfs
// programs first on PATH: each time Up must undo every step.
func TestUpFailureLeavesNothing(t *testing.T) {
	needRootAnd(t, "mkfs.btrfs")
	for _, c := range []struct {
		name, script, want string
	}{
		{"mkfs fails", "#!/bin/sh\necho 'mkfs: injected failure' >&2\nexit 1\n", "mkfs.btrfs: exit status 1: mkfs: injected failure"},
		{"mount fails", "#!/bin/sh\nexit 0\n", "scratch up: mount /dev/loop"},
	} {
		t.Run(c.name, func(t *testing.T) {
			bin := t.TempDir()
			if err := os.WriteFile(filepath.Join(bin, "mkfs.btrfs"), []byte(c.script), 0o755); err != nil {
				t.Fatal(err)
			}
			t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
			root := newRoot(t)
			_, err := Up(context.Background(), root, Options{Size: 512 << 20})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Up: %v; want an error containing %q", err, c.want)
			}
			assertGone(t, root, imagePath(root, "/dev/shm"))
		})
	}
}

// TestCompressUpDownRemount brings up a zstd-compressed btrfs scratch in
// a directory that outlives a reboot, checks the mount option and that
// compressible data takes less room than it holds, then plays a reboot
// (unmount, loop device gone, image kept): scratch up mounts the image
// again with the recorded compression and the data still there, other
// options are refused without touching it, and scratch down removes all.
func TestCompressUpDownRemount(t *testing.T) {
	needRootAnd(t, "mkfs.btrfs")
	ctx := context.Background()
	root := newRoot(t)
	dir := t.TempDir() // on the root's disk, as --dir /var/tmp would be
	opt := Options{Size: 512 << 20, Dir: dir, Compress: "zstd:5"}
	info, err := Up(ctx, root, opt)
	if err != nil {
		t.Fatalf("Up: %v", err)
	}
	t.Cleanup(func() { Down(ctx, root) })
	if info.Compress != "zstd:5" {
		t.Errorf("Info.Compress = %q; want zstd:5", info.Compress)
	}
	assertCompressMount(t, root, "zstd:5")
	data := []byte(strings.Repeat("pristine keeps this row compressed; ", 300000))
	file := filepath.Join(root.Data(), "f")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if u := measureSynced(t, file); u.Physical*4 > u.Logical {
		t.Errorf("11M of text on a zstd scratch: %+v; want physical under a quarter of logical", u)
	}

	// A reboot: the mount and the loop device go, the image on disk stays.
	if err := unix.Unmount(root.Data(), 0); err != nil {
		t.Fatal(err)
	}
	if held, err := detachLoops(info.Image); err != nil {
		t.Fatal(err)
	} else if len(held) > 0 {
		t.Skipf("no reboot to simulate: %s", heldWarning(held))
	}
	if st, err := Status(root); err != nil || st.Up || !st.Stale {
		t.Fatalf("Status after the reboot: %+v, %v; want stale", st, err)
	}
	if _, err := Up(ctx, root, Options{Size: 512 << 20, Dir: dir}); err == nil || !strings.Contains(err.Error(), "with --compress zstd:5") {
		t.Errorf("Up without --compress over a kept compressed image: %v; want a refusal naming the recorded options", err)
	}
	again, err := Up(ctx, root, opt)
	if err != nil || !again.Up || !again.Remounted || again.Compress != "zstd:5" {
		t.Fatalf("Up after the reboot: %+v, %v; want the image mounted again with zstd:5", again, err)
	}
	assertCompressMount(t, root, "zstd:5")
	if again.ReadaheadKB != ReadaheadKB {
		t.Errorf("readahead after the re-mount: %d KiB; want %d (a mount's setting goes with it)", again.ReadaheadKB, ReadaheadKB)
	}
	if b, err := os.ReadFile(file); err != nil || !bytes.Equal(b, data) {
		t.Errorf("the data after the re-mount: %d bytes, %v; want the %d written before", len(b), err, len(data))
	}
	if st, err := Up(ctx, root, opt); err != nil || !st.AlreadyUp {
		t.Errorf("Up again: %+v, %v; want AlreadyUp", st, err)
	}
	if _, err := Down(ctx, root); err != nil {
		t.Fatalf("Down: %v", err)
	}
	assertGone(t, root, info.Image)
}

// assertCompressMount checks that the data directory is mounted with
// compress=want and without nodatasum (btrfs does not compress data it
// does not checksum).
func assertCompressMount(t *testing.T, root *rootdir.Root, want string) {
	t.Helper()
	m, err := mountinfo.At(root.Data())
	if err != nil || m == nil {
		t.Fatalf("mount at %s: %+v, %v", root.Data(), m, err)
	}
	opts := "," + m.Options + ","
	if !strings.Contains(opts, ",compress="+want+",") || strings.Contains(opts, ",nodatasum,") {
		t.Errorf("mount options %q; want compress=%s and no nodatasum", m.Options, want)
	}
}

// measureSynced syncs the filesystem holding path and measures it.
func measureSynced(t *testing.T, path string) diskuse.Usage {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	unix.Syncfs(int(f.Fd()))
	f.Close()
	u, err := diskuse.Measure(path)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestCompressRefused(t *testing.T) {
	needRootAnd(t, "mkfs.xfs")
	root := newRoot(t)
	for _, c := range []struct {
		opt  Options
		want string
	}{
		{Options{Size: 512 << 20, FS: "xfs", Compress: "zstd"}, "--compress zstd:3 needs --fs btrfs: xfs has no transparent compression"},
		{Options{Size: 512 << 20, Compress: "zstd:16"}, `--compress "zstd:16": want zstd or zstd:LEVEL with a level from 1 to 15`},
		{Options{Size: 512 << 20, Compress: "lz4"}, `--compress "lz4"`},
	} {
		if _, err := Up(context.Background(), root, c.opt); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Up(%+v): %v; want an error containing %q", c.opt, err, c.want)
		}
		assertGone(t, root, imagePath(root, "/dev/shm"))
	}
}

func TestParseCompress(t *testing.T) {
	for in, want := range map[string]string{"": "", "none": "", "zstd": "zstd:3", "zstd:1": "zstd:1", "zstd:15": "zstd:15"} {
		if got, err := ParseCompress(in); err != nil || got != want {
			t.Errorf("ParseCompress(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"zstd:0", "zstd:x", "zlib", "zstd:"} {
		if _, err := ParseCompress(in); err == nil {
			t.Errorf("ParseCompress(%q) took it; want an error", in)
		}
	}
}

// TestRootOnCompressedBtrfs puts a root on a btrfs filesystem that is
// already mounted with compression (here another root's compressed
// scratch, standing in for an administrator's mount): scratch status of
// that root, with no scratch of its own, names the filesystem and its
// compression.
func TestRootOnCompressedBtrfs(t *testing.T) {
	needRootAnd(t, "mkfs.btrfs")
	ctx := context.Background()
	outer := newRoot(t)
	if _, err := Up(ctx, outer, Options{Size: 512 << 20, Compress: "zstd:1"}); err != nil {
		t.Fatalf("Up: %v", err)
	}
	t.Cleanup(func() { Down(ctx, outer) })
	inner, err := rootdir.Open(filepath.Join(outer.Data(), "inner"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := Status(inner)
	if err != nil || st.Up || st.RootFS != "btrfs" || st.RootCompress != "zstd:1" {
		t.Errorf("Status of a root on a zstd:1 btrfs: %+v, %v; want not up, root_fs btrfs, root_compress zstd:1", st, err)
	}
	// A btrfs pristine did not mount keeps its readahead (here put back
	// to btrfs's own 4 MiB by hand); Status names it and where it is set.
	if st.ReadaheadKB != ReadaheadKB || st.ReadaheadFile == "" {
		t.Fatalf("readahead of the root's btrfs: %d KiB at %q; want the scratch's %d", st.ReadaheadKB, st.ReadaheadFile, ReadaheadKB)
	}
	if err := os.WriteFile(st.ReadaheadFile, []byte("4096"), 0); err != nil {
		t.Fatal(err)
	}
	if st, err := Status(inner); err != nil || st.ReadaheadKB != 4096 {
		t.Errorf("Status of a root on a btrfs reading ahead 4096 KiB: %d KiB, %v; want 4096, left as it is", st.ReadaheadKB, err)
	}
	plain := newRoot(t)
	if st, err := Status(plain); err != nil || st.RootCompress != "" || st.RootFS == "" {
		t.Errorf("Status of a root on %s: %+v, %v; want its filesystem and no compression", st.RootFS, st, err)
	}
	if err := os.RemoveAll(inner.Path); err != nil {
		t.Fatal(err)
	}
}
