package scratch

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/pristinedb/pristine/internal/mountinfo"
	"github.com/pristinedb/pristine/internal/rootdir"
	"golang.org/x/sys/unix"
)

// Down unmounts the root's scratch filesystem, detaches its loop device and
// deletes its image. It acts only on what scratch.json records and the
// kernel confirms (the mount at root.Data() backed by this root's image);
// a filesystem pristine did not mount is refused. When processes keep the
// filesystem busy, the error names them and says how to stop them. Down with
// nothing to take down returns nil.
func Down(ctx context.Context, root *rootdir.Root) error {
	if err := needRoot("down"); err != nil {
		return err
	}
	unlock, err := lock(root)
	if err != nil {
		return fmt.Errorf("scratch down: %w", err)
	}
	defer unlock()
	rec, err := readRecord(root)
	if err != nil {
		return fmt.Errorf("scratch down: %w", err)
	}
	if rec == nil {
		m, err := mountinfo.At(root.Data())
		if err != nil {
			return fmt.Errorf("scratch down: %w", err)
		}
		if m != nil {
			return fmt.Errorf("scratch down: %s has %s mounted on it, but not by \"pristine scratch up\" (no %s); pristine leaves it alone",
				root.Data(), m.Source, recordName)
		}
		return nil
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("scratch down: %w", err)
	}
	if err := cleanup(root, rec); err != nil {
		return fmt.Errorf("scratch down: %w", err)
	}
	return nil
}

// cleanup takes down what rec records: the mount (when the kernel confirms
// it is backed by rec's image), the loop device, the image and the record.
func cleanup(root *rootdir.Root, rec *record) error {
	m, err := ourMount(root, rec)
	if err != nil {
		return err
	}
	if m != nil {
		below, err := mountinfo.Below(root.Data())
		if err != nil {
			return err
		}
		if len(below) > 0 {
			return fmt.Errorf("%s has other filesystems mounted inside it (%s); unmount those first", root.Data(), strings.Join(below, ", "))
		}
		if err := unix.Unmount(root.Data(), 0); errors.Is(err, unix.EBUSY) {
			return busyError(root.Data())
		} else if err != nil {
			return fmt.Errorf("unmount %s: %w", root.Data(), err)
		}
	}
	if err := detachLoops(rec.Image); err != nil {
		return err
	}
	if err := os.Remove(rec.Image); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", rec.Image, err)
	}
	return removeRecord(root)
}
