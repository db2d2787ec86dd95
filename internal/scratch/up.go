package scratch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/pristinedb/pristine/internal/mountinfo"
	"github.com/pristinedb/pristine/internal/rootdir"
	"golang.org/x/sys/unix"
)

// mkfsCommand returns the mkfs command line for fsType, the package that
// ships it, and the mount options.
func mkfsCommand(fsType, image string) (argv []string, pkg, opts string) {
	switch fsType {
	case "xfs":
		// Online discard punches holes in the image when files go, so
		// deleted slots give their RAM back. Project quotas cap each
		// slot's disk (pool up --slot-disk).
		return []string{"mkfs.xfs", "-q", "-m", "reflink=1", "-L", "pristine", image}, "xfsprogs", "discard,prjquota"
	default:
		// A single metadata copy: a second one in RAM buys nothing. No data
		// checksums: they guard against disks, not RAM, and writing 1.5 GB
		// took 9.5 s with them against 2.9 s without on a 2-core machine
		// (reflinks and snapshots work the same either way).
		return []string{"mkfs.btrfs", "-q", "-m", "single", "-d", "single", "-L", "pristine", image}, "btrfs-progs", "nodatasum"
	}
}

// Up creates the scratch filesystem and mounts it at root.Data(), which must
// be missing or empty. When it is already up with the same options, Up
// changes nothing and returns its Info with AlreadyUp set. On failure it
// removes everything it made.
func Up(ctx context.Context, root *rootdir.Root, opt Options) (_ *Info, err error) {
	if err := needRoot("up"); err != nil {
		return nil, err
	}
	if opt.FS == "" {
		opt.FS = "btrfs"
	}
	if opt.Size == 0 {
		opt.Size = DefaultSize
	}
	if opt.Dir == "" {
		opt.Dir = "/dev/shm"
	}
	min, ok := minSize[opt.FS]
	if !ok {
		return nil, fmt.Errorf("scratch up: --fs %q: want btrfs or xfs", opt.FS)
	}
	compress, err := ParseCompress(opt.Compress)
	if err != nil {
		return nil, fmt.Errorf("scratch up: %w", err)
	}
	if err := checkCompress(opt.FS, compress); err != nil {
		return nil, err
	}
	if opt.Size < min {
		return nil, fmt.Errorf("scratch up: --size %s is too small for %s; use --size %s or more", FormatSize(opt.Size), opt.FS, FormatSize(min))
	}
	dir, err := filepath.EvalSymlinks(opt.Dir)
	if err != nil {
		return nil, fmt.Errorf("scratch up: --dir %s: %w", opt.Dir, err)
	}
	if !filepath.IsAbs(dir) {
		if dir, err = filepath.Abs(dir); err != nil {
			return nil, fmt.Errorf("scratch up: --dir %s: %w", opt.Dir, err)
		}
	}
	unlock, err := lock(root)
	if err != nil {
		return nil, fmt.Errorf("scratch up: %w", err)
	}
	defer unlock()

	rec, err := readRecord(root)
	if err != nil {
		return nil, fmt.Errorf("scratch up: %w", err)
	}
	if rec != nil {
		info, err := Status(root)
		if err != nil {
			return nil, fmt.Errorf("scratch up: %w", err)
		}
		same := rec.FS == opt.FS && rec.Size == opt.Size && rec.Dir == dir && rec.Compress == compress
		if info.Up {
			if !same {
				return nil, fmt.Errorf("scratch up: already up as %s; run \"pristine scratch down\" first to change it", rec.describe())
			}
			info.AlreadyUp = true
			return info, nil
		}
		if rec.State == "up" && imageKept(rec.Image) {
			// Unmounted with its image still there: a reboot of a
			// disk-backed scratch (--dir on disk), or an unmount by hand.
			if !same {
				return nil, fmt.Errorf("scratch up: %s still holds the scratch filesystem made as %s, with its templates; run \"pristine scratch up\" with those options to mount it again, or \"pristine scratch down\" first to delete it",
					rec.Image, rec.describe())
			}
			return remount(root, rec)
		}
		// A record without its mount or image: a crash half-way, or a
		// reboot that emptied /dev/shm.
		if _, err := cleanup(root, rec); err != nil {
			return nil, fmt.Errorf("scratch up: clean up the previous scratch filesystem: %w", err)
		}
	}
	if err := checkMountPoint(root); err != nil {
		return nil, err
	}
	if err := checkFits(dir, opt.Size); err != nil {
		return nil, err
	}
	argv, pkg, _ := mkfsCommand(opt.FS, imagePath(root, dir))
	if _, err := exec.LookPath(argv[0]); err != nil {
		return nil, fmt.Errorf("scratch up: %s not found; install %s (apt-get install %s) or use --fs %s", argv[0], pkg, pkg, other(opt.FS))
	}

	rec = &record{State: "creating", FS: opt.FS, Size: opt.Size, Dir: dir, Image: imagePath(root, dir), Compress: compress, Created: time.Now().UTC()}
	if err := prepareImage(rec.Image); err != nil {
		return nil, err
	}
	if err := writeRecord(root, rec); err != nil {
		return nil, fmt.Errorf("scratch up: %w", err)
	}
	defer func() {
		if err != nil {
			if _, cerr := cleanup(root, rec); cerr != nil {
				err = fmt.Errorf("%w (and cleaning up failed: %v)", err, cerr)
			}
		}
	}()
	if err := createImage(rec.Image, rec.Size); err != nil {
		return nil, err
	}
	if out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput(); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("scratch up: %s: %w", argv[0], ctx.Err())
		}
		return nil, fmt.Errorf("scratch up: %s: %v: %s", argv[0], err, lastLine(out))
	}
	if err := attachAndMount(root, rec); err != nil {
		return nil, err
	}
	if opt.FS == "btrfs" {
		// Simple quotas cap each slot's disk (pool up --slot-disk). A
		// kernel without them (before 6.7) still gets a working scratch,
		// uncapped: pool up says so.
		_ = enableBtrfsQuota(root.Data())
	}
	rec.State = "up"
	if err := writeRecord(root, rec); err != nil {
		return nil, fmt.Errorf("scratch up: %w", err)
	}
	return Status(root)
}

// attachAndMount binds rec's image to a loop device and mounts it at the
// root's data directory with the options rec records; it sets rec.Loop.
func attachAndMount(root *rootdir.Root, rec *record) error {
	dev, fd, err := attachLoop(rec.Image)
	if err != nil {
		return fmt.Errorf("scratch up: %w", err)
	}
	rec.Loop = dev
	opts := mountOptions(rec.FS, rec.Compress)
	err = mountData(root, dev, rec.FS, opts)
	if errors.Is(err, unix.EINVAL) && strings.Contains(opts, "prjquota") {
		// A kernel built without XFS quotas refuses the option: the
		// scratch works, its slots are not capped (pool status says so).
		err = mountData(root, dev, rec.FS, strings.Replace(opts, ",prjquota", "", 1))
	}
	unix.Close(fd) // the mount holds the device now; autoclear frees it on unmount
	if err != nil {
		return err
	}
	// A filesystem that keeps its kernel's readahead works, slower: scratch
	// status shows the readahead in force.
	_ = setReadahead(rec.FS, dev)
	return nil
}

// imageKept reports whether image still exists.
func imageKept(image string) bool {
	_, err := os.Lstat(image)
	return err == nil
}

// remount mounts the recorded image again, with the recorded options
// (compression included), keeping what it holds. On failure the image is
// kept and the error says how to start over.
func remount(root *rootdir.Root, rec *record) (*Info, error) {
	if err := checkMountPoint(root); err != nil {
		return nil, err
	}
	// Mounting the image again while another namespace still has it
	// mounted would write one filesystem from two mounts.
	if held, err := detachLoops(rec.Image); err != nil {
		return nil, fmt.Errorf("scratch up: %w", err)
	} else if len(held) > 0 {
		return nil, fmt.Errorf("scratch up: cannot mount %s again: %s", rec.Image, heldWarning(held))
	}
	if err := attachAndMount(root, rec); err != nil {
		return nil, fmt.Errorf("%w; %s is kept: run \"pristine scratch down\" to delete it and start over", err, rec.Image)
	}
	if err := writeRecord(root, rec); err != nil {
		return nil, fmt.Errorf("scratch up: %w", err)
	}
	info, err := Status(root)
	if err != nil {
		return nil, err
	}
	info.Remounted = true
	return info, nil
}

func other(fsType string) string {
	if fsType == "xfs" {
		return "btrfs"
	}
	return "xfs"
}

// checkMountPoint refuses a data directory that holds files or has another
// filesystem mounted on it.
func checkMountPoint(root *rootdir.Root) error {
	if err := root.Check(root.Data()); err != nil {
		return fmt.Errorf("scratch up: %w", err)
	}
	m, err := mountinfo.At(root.Data())
	if err != nil {
		return fmt.Errorf("scratch up: %w", err)
	}
	if m != nil {
		return fmt.Errorf("scratch up: %s already has %s mounted on it (%s), which pristine did not make; unmount it first",
			root.Data(), m.FSType, m.Source)
	}
	left, err := DataEntries(root)
	if err != nil {
		return fmt.Errorf("scratch up: %w", err)
	}
	if len(left) > 0 {
		return fmt.Errorf("scratch up: %s holds %s (made without scratch): run `pristine scratch up --move` to move its templates onto the scratch filesystem, or remove them (`pristine template rm NAME`)",
			root.Data(), strings.Join(left, ", "))
	}
	return nil
}

// DataEntries lists what the root's data directory holds, after removing
// the empty directories a store leaves (templates/, base/, pools/ once
// their last entry is gone): what would be hidden under a scratch mount.
func DataEntries(root *rootdir.Root) ([]string, error) {
	ents, err := os.ReadDir(root.Data())
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	var left []string
	for _, e := range ents {
		p := filepath.Join(root.Data(), e.Name())
		if e.IsDir() && os.Remove(p) == nil {
			continue // was empty
		}
		left = append(left, p)
	}
	return left, nil
}

// checkFits refuses a size larger than the free space in dir, naming the
// largest size that fits. The image is sparse, so this is the most it can
// ever take.
func checkFits(dir string, size int64) error {
	var sfs unix.Statfs_t
	if err := unix.Statfs(dir, &sfs); err != nil {
		return fmt.Errorf("scratch up: --dir %s: %w", dir, err)
	}
	free := int64(sfs.Bavail) * sfs.Bsize
	if size > free {
		return fmt.Errorf("scratch up: --size %s does not fit in %s, which has %s free; use --size %s or less, or --dir on a larger filesystem",
			FormatSize(size), dir, FormatSize(free), floorSize(free))
	}
	return nil
}

// prepareImage removes a leftover image of this root that no loop device
// uses (its name carries the root's id, so it is pristine's own) and refuses
// one still in use.
func prepareImage(image string) error {
	if _, err := os.Lstat(image); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	devs, err := loopsOf(image)
	if err != nil {
		return fmt.Errorf("scratch up: %w", err)
	}
	if len(devs) > 0 {
		return fmt.Errorf("scratch up: %s is still in use by %s but not recorded in %s; unmount it, then run \"pristine scratch down\"",
			image, strings.Join(devs, ", "), recordName)
	}
	if err := os.Remove(image); err != nil {
		return fmt.Errorf("scratch up: remove leftover %s: %w", image, err)
	}
	return nil
}

// createImage creates the sparse image file.
func createImage(image string, size int64) error {
	f, err := os.OpenFile(image, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("scratch up: create %s: %w", image, err)
	}
	if err := f.Truncate(size); err != nil {
		f.Close()
		return fmt.Errorf("scratch up: size %s: %w", image, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("scratch up: create %s: %w", image, err)
	}
	return nil
}

// mountData mounts dev at the root's data directory.
func mountData(root *rootdir.Root, dev, fsType, opts string) error {
	if err := os.MkdirAll(root.Data(), 0o755); err != nil {
		return fmt.Errorf("scratch up: %w", err)
	}
	if err := unix.Mount(dev, root.Data(), fsType, unix.MS_NOATIME, opts); err != nil {
		return fmt.Errorf("scratch up: mount %s (%s) at %s: %w", dev, fsType, root.Data(), err)
	}
	return nil
}

// lastLine returns the last non-empty line of a command's output.
func lastLine(out []byte) string {
	lines := bytes.Split(bytes.TrimSpace(out), []byte("\n"))
	return string(lines[len(lines)-1])
}
