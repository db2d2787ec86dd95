package mariadb

import (
	"fmt"
	"os/exec"
	"runtime"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A server pristine starts is thrown away, never recovered after a crash
// of the machine, so nothing it writes needs to reach the disk before the
// kernel writes it back on its own: its options say so where the server
// has one (innodb_flush_method=nosync, profile.go). MySQL still calls
// fsync for every tablespace its page cleaner flushes, for each import and
// discard of a tablespace and when it extends a file: on btrfs each call
// commits the filesystem's log, about a tenth of the machine's CPU in a
// MySQL soak (docs/benchmarks.md, "No fsync for a server"). MariaDB with
// its nosync makes almost none.
//
// So every server starts under a seccomp filter that answers fsync,
// fdatasync, sync_file_range, syncfs and sync with success without
// running them. The filter is the kernel's own: it is installed on one
// operating-system thread of pristine's (noSyncThread) that does nothing
// but start servers, and a child inherits its parent thread's filter
// across exec. pristine's other threads, and every other program it runs
// (a build's migrate command, mariadb-install-db, the filesystems' tools),
// are left as they are; the Go runtime makes no new thread from a locked
// thread, so none inherits the filter. The filter also needs no_new_privs,
// which a server can do without: no program it runs gains privileges from
// a set-user-id bit.

// noSyncSyscalls are the calls the filter answers with success.
var noSyncSyscalls = []uint32{unix.SYS_FSYNC, unix.SYS_FDATASYNC, unix.SYS_SYNC_FILE_RANGE, unix.SYS_SYNCFS, unix.SYS_SYNC}

// noSyncFilter is the classic BPF program of the filter for arch (the
// AUDIT_ARCH_* value of the machine's own system call convention): a
// call of another convention is let through untouched.
func noSyncFilter(arch uint32) []unix.SockFilter {
	const (
		ld  = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		ret = unix.BPF_RET | unix.BPF_K
		// offsets in struct seccomp_data
		nrOffset   = 0
		archOffset = 4
	)
	n := len(noSyncSyscalls)
	// ld arch; jeq arch (else allow); ld nr; one jeq per call (to the
	// success); allow; success.
	prog := []unix.SockFilter{
		{Code: ld, K: archOffset},
		{Code: jeq, Jt: 0, Jf: uint8(n + 1), K: arch},
		{Code: ld, K: nrOffset},
	}
	for i, nr := range noSyncSyscalls {
		prog = append(prog, unix.SockFilter{Code: jeq, Jt: uint8(n - i), Jf: 0, K: nr})
	}
	return append(prog,
		unix.SockFilter{Code: ret, K: unix.SECCOMP_RET_ALLOW},
		unix.SockFilter{Code: ret, K: unix.SECCOMP_RET_ERRNO}, // errno 0: success
	)
}

// noSyncThread runs the starts of servers on the one thread that carries
// the filter.
type noSyncThread struct {
	once sync.Once
	reqs chan func()
	err  error // why the thread has no filter; its starts run all the same
}

var noSync noSyncThread

// run calls start on the filtered thread and returns its error. Where the
// filter could not be installed (a kernel without seccomp, a container
// that forbids it), start runs there without it: the server then makes
// its fsyncs.
func (t *noSyncThread) run(start func() error) error {
	t.begin()
	done := make(chan error, 1)
	t.reqs <- func() { done <- start() }
	return <-done
}

// begin starts the thread, once, and returns when its filter is in place
// (or known to be missing).
func (t *noSyncThread) begin() {
	t.once.Do(func() {
		t.reqs = make(chan func())
		ready := make(chan struct{})
		go t.loop(ready)
		<-ready
	})
}

// loop locks its goroutine to its thread for good (the thread ends with
// it, and runs nothing else meanwhile), installs the filter and serves
// the starts.
func (t *noSyncThread) loop(ready chan<- struct{}) {
	runtime.LockOSThread()
	t.err = installNoSync()
	close(ready)
	for f := range t.reqs {
		f()
	}
}

// installNoSync puts the filter on the calling thread alone.
func installNoSync() error {
	arch, ok := auditArch[runtime.GOARCH]
	if !ok {
		return fmt.Errorf("no seccomp filter for %s", runtime.GOARCH)
	}
	prog := noSyncFilter(arch)
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("set no_new_privs: %w", err)
	}
	// Without TSYNC: the filter is the calling thread's alone. With
	// SPEC_ALLOW: a kernel whose speculative store bypass mitigation is
	// "seccomp" would otherwise turn it on for every server, at a cost in
	// all they run. A kernel older than that flag (4.17) refuses it:
	// prctl then installs the same filter.
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_SPEC_ALLOW, uintptr(unsafe.Pointer(&fprog)))
	if errno != 0 {
		if err := unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&fprog)), 0, 0); err != nil {
			return fmt.Errorf("install the seccomp filter: %w", err)
		}
	}
	runtime.KeepAlive(prog)
	return nil
}

// auditArch is the AUDIT_ARCH_* value of each architecture pristine is
// released for.
var auditArch = map[string]uint32{
	"amd64": unix.AUDIT_ARCH_X86_64,
	"arm64": unix.AUDIT_ARCH_AARCH64,
}

// startNoSync starts cmd so that its fsyncs do nothing (see above).
func startNoSync(cmd *exec.Cmd) error {
	return noSync.run(cmd.Start)
}

// NoSyncError says why the servers pristine starts make their fsyncs
// after all: the seccomp filter could not be installed on this machine.
// It is nil where their fsyncs do nothing.
func NoSyncError() error {
	noSync.begin()
	return noSync.err
}
