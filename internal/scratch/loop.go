package scratch

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/pristinedb/pristine/internal/mountinfo"
	"golang.org/x/sys/unix"
)

// attachLoop binds image to a free loop device with autoclear set, so the
// device detaches itself when its last user (the mount) goes. It returns the
// device path and an open descriptor of it, which the caller closes once
// the filesystem is mounted.
func attachLoop(image string) (string, int, error) {
	ctl, err := unix.Open("/dev/loop-control", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", -1, fmt.Errorf("open /dev/loop-control: %w; is the loop module loaded (modprobe loop)?", err)
	}
	defer unix.Close(ctl)
	img, err := unix.Open(image, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", -1, fmt.Errorf("open %s: %w", image, err)
	}
	defer unix.Close(img)
	for range 20 {
		n, err := unix.IoctlRetInt(ctl, unix.LOOP_CTL_GET_FREE)
		if err != nil {
			return "", -1, fmt.Errorf("find a free loop device: %w", err)
		}
		dev := fmt.Sprintf("/dev/loop%d", n)
		fd, err := unix.Open(dev, unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			return "", -1, fmt.Errorf("open %s: %w", dev, err)
		}
		cfg := unix.LoopConfig{Fd: uint32(img)}
		cfg.Info.Flags = unix.LO_FLAGS_AUTOCLEAR
		copy(cfg.Info.File_name[:], image)
		err = unix.IoctlLoopConfigure(fd, &cfg)
		if err == nil {
			return dev, fd, nil
		}
		unix.Close(fd)
		if !errors.Is(err, unix.EBUSY) {
			return "", -1, fmt.Errorf("bind %s to %s: %w", image, dev, err)
		}
		// Another process took the device between GET_FREE and CONFIGURE.
	}
	return "", -1, fmt.Errorf("bind %s to a loop device: every free device was taken by others; retry", image)
}

// loopsOf returns the loop devices whose backing file is image.
func loopsOf(image string) ([]string, error) {
	paths, err := filepath.Glob("/sys/block/loop*/loop/backing_file")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // detached meanwhile
		}
		backing := strings.TrimSuffix(strings.TrimSpace(string(b)), " (deleted)")
		if backing == image {
			out = append(out, "/dev/"+filepath.Base(filepath.Dir(filepath.Dir(p))))
		}
	}
	return out, nil
}

// backingOf returns the backing file of the loop device a mount comes from,
// or "" when it does not come from a loop device. The mount's source names
// the device (btrfs reports an anonymous device number instead of the
// loop device's, so the number is only a fallback).
func backingOf(m *mountinfo.Mount) string {
	p := "/sys/dev/block/" + m.Dev + "/loop/backing_file"
	if name, ok := strings.CutPrefix(m.Source, "/dev/"); ok && strings.HasPrefix(name, "loop") && !strings.Contains(name, "/") {
		p = "/sys/block/" + name + "/loop/backing_file"
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(strings.TrimSpace(string(b)), " (deleted)")
}

// detachLoops detaches every loop device still bound to image and waits
// a while until none is. Autoclear usually has done it already when the
// filesystem was unmounted; this waits a moment for that before detaching
// by hand. A device whose filesystem is still mounted in other mount
// namespaces cannot go yet: it is left to autoclear, which detaches it
// when they let go, and the processes there are returned.
func detachLoops(image string) ([]copyHolder, error) {
	var devs []string
	for i := range 20 {
		var err error
		if devs, err = loopsOf(image); err != nil || len(devs) == 0 {
			return nil, err
		}
		if i < 19 {
			time.Sleep(25 * time.Millisecond)
		}
	}
	if hs := mountedElsewhere(devs); len(hs) > 0 {
		return hs, nil
	}
	for _, dev := range devs {
		fd, err := unix.Open(dev, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, fmt.Errorf("detach %s: %w", dev, err)
		}
		err = unix.IoctlSetInt(fd, unix.LOOP_CLR_FD, 0)
		unix.Close(fd)
		if err != nil && !errors.Is(err, unix.ENXIO) {
			return nil, fmt.Errorf("detach %s from %s: %w", dev, image, err)
		}
	}
	// A device still open elsewhere (the unmounted filesystem's last
	// writes after an error, a udev probe) is only marked to detach on its
	// last close: wait up to 10 s for that, so the image is usually free
	// when this returns; past that the kernel detaches it on that close.
	for range 400 {
		if devs, err := loopsOf(image); err != nil || len(devs) == 0 {
			return nil, err
		}
		time.Sleep(25 * time.Millisecond)
	}
	return nil, nil
}
