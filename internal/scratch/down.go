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

// Report is what Down could not finish itself.
type Report struct {
	// Warning, when not empty, says that processes in other mount
	// namespaces still have a copy of the filesystem mounted (made when
	// their namespace was created while it was up; where mounts are
	// private, an unmount here does not reach it), names them and says how
	// to let it go. The image is deleted and the record gone, but the loop
	// device stays bound, and the image's space used, until they exit or
	// unmount it; the kernel then frees both, with nothing left to do.
	Warning string
}

// Down unmounts the root's scratch filesystem, detaches its loop device and
// deletes its image. It acts only on what scratch.json records and the
// kernel confirms (the mount at root.Data() backed by this root's image);
// a filesystem pristine did not mount is refused. When processes keep the
// filesystem busy, the error names them and says how to stop them; when
// copies of the mount in other mount namespaces keep the loop device, the
// Report's warning does. Down with nothing to take down returns a zero
// Report and nil.
func Down(ctx context.Context, root *rootdir.Root) (Report, error) {
	if err := needRoot("down"); err != nil {
		return Report{}, err
	}
	unlock, err := lock(root)
	if err != nil {
		return Report{}, fmt.Errorf("scratch down: %w", err)
	}
	defer unlock()
	rec, err := readRecord(root)
	if err != nil {
		return Report{}, fmt.Errorf("scratch down: %w", err)
	}
	if rec == nil {
		m, err := mountinfo.At(root.Data())
		if err != nil {
			return Report{}, fmt.Errorf("scratch down: %w", err)
		}
		if m != nil {
			return Report{}, fmt.Errorf("scratch down: %s has %s mounted on it, but not by \"pristine scratch up\" (no %s); pristine leaves it alone",
				root.Data(), m.Source, recordName)
		}
		return Report{}, nil
	}
	if err := ctx.Err(); err != nil {
		return Report{}, fmt.Errorf("scratch down: %w", err)
	}
	held, err := cleanup(root, rec)
	if err != nil {
		return Report{}, fmt.Errorf("scratch down: %w", err)
	}
	var r Report
	if len(held) > 0 {
		r.Warning = heldWarning(held)
	}
	return r, nil
}

// cleanup takes down what rec records: the mount (when the kernel confirms
// it is backed by rec's image), the loop device, the image and the record.
// It returns the processes of other mount namespaces whose copies of the
// mount keep the loop device bound (left to its autoclear).
func cleanup(root *rootdir.Root, rec *record) ([]copyHolder, error) {
	m, err := ourMount(root, rec)
	if err != nil {
		return nil, err
	}
	if m != nil {
		below, err := mountinfo.Below(root.Data())
		if err != nil {
			return nil, err
		}
		if len(below) > 0 {
			return nil, fmt.Errorf("%s has other filesystems mounted inside it (%s); unmount those first", root.Data(), strings.Join(below, ", "))
		}
		if err := unix.Unmount(root.Data(), 0); errors.Is(err, unix.EBUSY) {
			return nil, busyError(root.Data())
		} else if err != nil {
			return nil, fmt.Errorf("unmount %s: %w", root.Data(), err)
		}
	}
	held, err := detachLoops(rec.Image)
	if err != nil {
		return nil, err
	}
	if err := os.Remove(rec.Image); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("remove %s: %w", rec.Image, err)
	}
	return held, removeRecord(root)
}
