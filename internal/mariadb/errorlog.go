package mariadb

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// logTailBytes is how much of the end of an error log LogTail reads: the
// last lines pristine reports (a crash report's cause lies within a few
// hundred lines of its end), not a log of any size.
const logTailBytes = 256 << 10

// readTail reads the last max bytes of the file at path, from the start
// of a line when it does not read the whole file.
func readTail(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	off := fi.Size() - max
	if off <= 0 {
		b := make([]byte, fi.Size())
		n, err := f.ReadAt(b, 0)
		return b[:n], ignoreEOF(err)
	}
	b := make([]byte, max)
	n, err := f.ReadAt(b, off)
	b = b[:n]
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		b = b[i+1:]
	}
	return b, ignoreEOF(err)
}

func ignoreEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// CapErrorLog cuts the error log at path, once it has grown past limit
// bytes, to about its last keep bytes (from a line's start), after a line
// saying how much was cut, and returns how many bytes it removed; a log
// within limit, or none, is left alone. A server appends to its error
// log (O_APPEND), so its next line lands at the new end; a line it writes
// while the log is cut comes before the kept part.
//
// A write the server has under way when the cut begins is waited for
// (writeBarrier), and the end is read again until the log stops growing,
// so the kept part ends with the last line written: only a write that
// begins in the moment between the last read of its size and the cut
// itself can be lost.
//
// The log lies in the server's run directory, which belongs to the
// server's account: it is opened without following a symlink and cut only
// when it is a regular file with one link, so that the account cannot
// make pristine cut any other file.
func CapErrorLog(path string, limit, keep int64) (int64, error) {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil || st.Size <= limit {
		return 0, nil // none (yet), or within its cap: the usual case, one call
	}
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_APPEND|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, fmt.Errorf("cap error log %s: %w", path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	if err := unix.Fstat(fd, &st); err != nil {
		return 0, fmt.Errorf("cap error log %s: %w", path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink != 1 {
		return 0, fmt.Errorf("cap error log %s: %w", path, errNotALog)
	}
	var tail []byte
	for end, tries := int64(-1), 0; ; tries++ {
		writeBarrier(fd)
		if err := unix.Fstat(fd, &st); err != nil {
			return 0, fmt.Errorf("cap error log %s: %w", path, err)
		}
		if st.Size == end || tries == 8 {
			break
		}
		if end = st.Size; end <= limit {
			return 0, nil
		}
		tail = make([]byte, min(keep, end))
		n, err := f.ReadAt(tail, end-int64(len(tail)))
		if ignoreEOF(err) != nil {
			return 0, fmt.Errorf("cap error log %s: %w", path, err)
		}
		tail = tail[:n]
		if i := bytes.IndexByte(tail, '\n'); i >= 0 {
			tail = tail[i+1:]
		}
	}
	cut := st.Size - int64(len(tail))
	if err := unix.Ftruncate(fd, 0); err != nil {
		return 0, fmt.Errorf("cap error log %s: %w", path, err)
	}
	note := fmt.Sprintf("[pristine] %d bytes cut from the start of this log, over its cap of %d bytes\n", cut, limit)
	if _, err := f.Write(append([]byte(note), tail...)); err != nil {
		return cut, fmt.Errorf("cap error log %s: %w", path, err)
	}
	return cut, nil
}

// writeBarrier returns once no write to the file of fd is under way: an
// fallocate that changes nothing (one byte of a file that has it, its
// size kept) takes the inode's lock, which every write to a regular file
// holds from its first byte to its last on ext4, XFS, btrfs and tmpfs.
// Where fallocate is not supported, it returns at once.
func writeBarrier(fd int) {
	_ = unix.Fallocate(fd, unix.FALLOC_FL_KEEP_SIZE, 0, 1)
}

var errNotALog = errors.New("not a regular file with one link: left alone")
