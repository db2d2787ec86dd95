package archive

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// The receive ladder, best rung first:
//
//  1. clone: FICLONERANGE from an archive file on the same reflink
//     filesystem; the extent shares blocks with the archive.
//  2. copy: copy_file_range from an archive file; the kernel copies (or a
//     network filesystem copies server-side).
//  3. splice: from a pipe into the file, when payloads need not be hashed.
//  4. write: read (or receive) into a buffer, hash, pwrite.
//
// A rung that the kernel refuses once (EXDEV, EOPNOTSUPP, EINVAL...) is not
// tried again for the rest of the run.

// refused reports errors that mean "this rung does not work here", as
// opposed to real I/O failures.
func refused(err error) bool {
	return errors.Is(err, unix.EXDEV) || errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EINVAL) ||
		errors.Is(err, unix.ENOTTY) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EBADF) ||
		errors.Is(err, unix.EPERM) || errors.Is(err, unix.ETXTBSY)
}

// cloneRange shares n bytes (a multiple of the block size) of src at srcOff
// into dst at dstOff.
func cloneRange(src *os.File, srcOff int64, dst *os.File, dstOff int64, n int64) error {
	if n <= 0 {
		return nil
	}
	return unix.IoctlFileCloneRange(int(dst.Fd()), &unix.FileCloneRange{
		Src_fd:      int64(src.Fd()),
		Src_offset:  uint64(srcOff),
		Src_length:  uint64(n), // never 0: 0 would mean "to EOF"
		Dest_offset: uint64(dstOff),
	})
}

// copyRange moves n bytes with copy_file_range. It returns how many bytes it
// moved before an error.
func copyRange(src *os.File, srcOff int64, dst *os.File, dstOff int64, n int64) (int64, error) {
	var done int64
	for done < n {
		so, do := srcOff+done, dstOff+done
		k, err := unix.CopyFileRange(int(src.Fd()), &so, int(dst.Fd()), &do, int(min(n-done, 1<<30)), 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return done, err
		}
		if k == 0 {
			return done, fmt.Errorf("copy_file_range: source ended at %d", srcOff+done)
		}
		done += int64(k)
	}
	return done, nil
}

// spliceRange moves n bytes from the pipe p into dst at dstOff.
func spliceRange(p *os.File, dst *os.File, dstOff int64, n int64) (int64, error) {
	var done int64
	for done < n {
		off := dstOff + done
		k, err := unix.Splice(int(p.Fd()), nil, int(dst.Fd()), &off, int(min(n-done, 1<<30)), unix.SPLICE_F_MOVE|unix.SPLICE_F_MORE)
		if err == unix.EINTR || err == unix.EAGAIN {
			continue
		}
		if err != nil {
			return done, err
		}
		if k == 0 {
			return done, nil // writer closed the pipe
		}
		done += k
	}
	return done, nil
}

// pwriteAll writes b at off, naming the file and the fix on a full disk.
func pwriteAll(f *os.File, b []byte, off int64) error {
	if _, err := f.WriteAt(b, off); err != nil {
		return fmt.Errorf("unpack: %w%s", err, diskHint(err))
	}
	return nil
}

// isPipe reports whether f is a pipe (or FIFO).
func isPipe(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeNamedPipe != 0
}

// isRegular reports whether f is a regular file.
func isRegular(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode().IsRegular()
}
