package server

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/pristinedb/pristine/internal/rootdir"
)

// TestSocketPrivateFromTheStart: under umask 000 the daemon's socket is
// never reachable with a mode other than 0600. At the moment it is bound
// (afterBind) nothing is at its path yet and the bound socket sits in a
// directory only its owner may enter; after Listen it is 0600 and answers;
// Close removes it. Without the private directory the bound socket is at
// its path, mode 0777, until the chmod.
func TestSocketPrivateFromTheStart(t *testing.T) {
	root, err := rootdir.Open(filepath.Join(t.TempDir(), "root"))
	if err != nil {
		t.Fatal(err)
	}
	path := SocketPath(root)
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	var checked bool
	afterBind = func(tmp string) {
		checked = true
		if fi, err := os.Lstat(path); err == nil {
			t.Errorf("a socket is reachable at %s with mode %v before its mode is set", path, fi.Mode())
		}
		if dir, err := os.Lstat(filepath.Dir(tmp)); err != nil || dir.Mode().Perm() != 0o700 {
			t.Errorf("the socket is bound in %s (%v, %v): want a directory of mode 0700", filepath.Dir(tmp), dir.Mode(), err)
		}
	}
	defer func() { afterBind = nil }()
	ln, err := Listen(root)
	if err != nil {
		t.Fatal(err)
	}
	if !checked {
		t.Fatal("afterBind was not called: the test proved nothing")
	}
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode()&fs.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the socket after Listen: %v %v, want a socket of mode 0600", fi.Mode(), err)
	}
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatalf("the socket does not answer at its path: %v", err)
	}
	c.Close()
	if ents, _ := filepath.Glob(filepath.Join(root.Path, ".sock-*")); len(ents) > 0 {
		t.Errorf("Listen left %v", ents)
	}
	ln.Close()
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the socket is left after Close: %v", err)
	}
}
