// Package svcuser is who the database servers run as. When pristine runs as
// root, no server runs as root: a server that could write files as root
// could be made to load a plugin written with SELECT ... INTO DUMPFILE.
// Each server that runs SQL a test or client chose (a slot, a template
// build, a base bootstrap, a verify clone) runs under a server id of its
// own, claimed from a reserved range for its data directory (Claim, ids.go),
// so that root of one slot can write only inside its own slot; finished
// templates and bases are sealed to pristine's own user (Seal). The system
// account "pristine" (Get) gives its group to every server's run directory
// and runs the few throwaway servers that need no id of their own. When
// pristine runs as any other user, servers run as that user. See
// docs/security.md.
package svcuser

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Name is the system account servers run as when pristine runs as root.
const Name = "pristine"

// Account is who the servers run as.
type Account struct {
	Name     string
	UID, GID int
	// RunGID is the group of the server's run directory (its socket):
	// group "pristine", whose members may use slot sockets.
	RunGID int
	// Drop is true when pristine runs as root and servers are started
	// under this account instead (SysProcAttr.Credential).
	Drop bool
}

var (
	once   sync.Once
	cached Account
	errGet error
)

// Get returns the account servers run as: the current user, or, when
// pristine runs as root, the system account "pristine", created with
// useradd when it is missing. The result is cached for the process.
func Get() (Account, error) {
	once.Do(func() { cached, errGet = get() })
	return cached, errGet
}

func get() (Account, error) {
	if os.Geteuid() != 0 {
		name := strconv.Itoa(os.Geteuid())
		if u, err := user.Current(); err == nil {
			name = u.Username
		}
		return Account{Name: name, UID: os.Geteuid(), GID: os.Getegid(), RunGID: os.Getegid()}, nil
	}
	if a, err := lookup(); err == nil {
		return a, nil
	}
	if err := create(); err != nil {
		// Another process may have created it meanwhile.
		if a, lerr := lookup(); lerr == nil {
			return a, nil
		}
		return Account{}, err
	}
	return lookup()
}

func lookup() (Account, error) {
	u, err := user.Lookup(Name)
	if err != nil {
		return Account{}, err
	}
	uid, err := strconv.Atoi(u.Uid)
	if err != nil {
		return Account{}, fmt.Errorf("account %s: uid %q: %w", Name, u.Uid, err)
	}
	gid, err := strconv.Atoi(u.Gid)
	if err != nil {
		return Account{}, fmt.Errorf("account %s: gid %q: %w", Name, u.Gid, err)
	}
	if uid == 0 || gid == 0 {
		return Account{}, fmt.Errorf("account %s has uid %d gid %d: the servers' account must not be root: remove it (userdel %s) and let pristine create it", Name, uid, gid, Name)
	}
	return Account{Name: Name, UID: uid, GID: gid, RunGID: gid, Drop: true}, nil
}

// UseraddArgs are the arguments that create the system account; install-deps
// runs the same command.
var UseraddArgs = []string{"--system", "--user-group", "--no-create-home", "--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin", Name}

func create() error {
	out, err := exec.Command("useradd", UseraddArgs...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("create the system account %q that database servers run as: useradd: %w: %s: create it yourself (useradd %s) or run scripts/install-deps.sh",
			Name, err, strings.TrimSpace(string(out)), strings.Join(UseraddArgs, " "))
	}
	return nil
}

// Credential is what exec.Cmd.SysProcAttr.Credential should be for a
// server: its uid and gid and, as its one supplementary group, DataGID
// (the sealed templates' shareable files, in its own clone); nil when
// servers run as the current user.
func (a Account) Credential() *syscall.Credential {
	if !a.Drop {
		return nil
	}
	return &syscall.Credential{Uid: uint32(a.UID), Gid: uint32(a.GID), Groups: []uint32{DataGID}}
}

// RunDirMode is the mode of a server's run directory (socket, pid file,
// error log): 0750 with the account's group when pristine runs as root,
// so members of group "pristine" may use slot sockets; 0700 otherwise.
func (a Account) RunDirMode() fs.FileMode {
	if a.Drop {
		return 0o750
	}
	return 0o700
}

// Own makes directory path belong to the account, with mode; without Drop
// only the mode is set. The directory is opened without following a
// symlink and changed through that descriptor, so a symlink put in its
// place cannot redirect the change.
func (a Account) Own(path string, mode fs.FileMode) error {
	return a.own(path, a.GID, mode)
}

// OwnRun makes a server's run directory belong to the account, in group
// RunGID ("pristine"), with RunDirMode: members of the group reach the
// socket, nobody else does.
func (a Account) OwnRun(path string) error {
	return a.own(path, a.RunGID, a.RunDirMode())
}

func (a Account) own(path string, gid int, mode fs.FileMode) error {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("give %s to account %s: %w", path, a.Name, err)
	}
	defer unix.Close(fd)
	if a.Drop {
		if err := unix.Fchown(fd, a.UID, gid); err != nil {
			return fmt.Errorf("give %s to account %s: %w", path, a.Name, err)
		}
	}
	if err := unix.Fchmod(fd, uint32(mode.Perm())); err != nil {
		return fmt.Errorf("chmod %s: %w", path, err)
	}
	return nil
}

// OwnTree gives every file under dir (dir included, symlinks not followed)
// to the account, for trees written by pristine itself (an unpacked
// archive, a physical copy) before a server starts on them. Without Drop it
// does nothing. Modes are left alone except dir's, which becomes 0700.
func (a Account) OwnTree(dir string) error {
	if !a.Drop {
		return a.Own(dir, 0o700)
	}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, a.UID, a.GID)
	})
	if err != nil {
		return fmt.Errorf("give %s to account %s: %w", dir, a.Name, err)
	}
	return a.Own(dir, 0o700)
}

// ErrUnreachable is wrapped by CheckReachable's errors.
var ErrUnreachable = errors.New("the servers' account cannot reach the directory")

// CheckReachable checks that the account can search every directory above
// path (it must reach its data and run directories through them). It is
// a no-op without Drop.
func (a Account) CheckReachable(path string) error {
	if !a.Drop {
		return nil
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	for d := filepath.Dir(abs); ; d = filepath.Dir(d) {
		var st syscall.Stat_t
		if err := syscall.Stat(d, &st); err != nil {
			return fmt.Errorf("check %s: %w", d, err)
		}
		if !a.canSearch(&st) && d == "/" {
			// Debian's / is 0755; a 0700 one (a debootstrap into a
			// mktemp directory) keeps every unprivileged service out.
			return fmt.Errorf("%w %s: the filesystem root / is mode %04o, so no unprivileged account (%s, uid %d, that servers run as, among them) can reach anything: give it Debian's mode with chmod 0755 / (scripts/install-deps.sh does)",
				ErrUnreachable, path, st.Mode&0o7777, a.Name, a.UID)
		}
		if !a.canSearch(&st) {
			return fmt.Errorf("%w %s: %s is mode %04o owned by uid %d, which %s (uid %d) may not search: choose a root outside it (e.g. --root /var/lib/pristine) or allow it: chmod o+x %s",
				ErrUnreachable, path, d, st.Mode&0o7777, st.Uid, a.Name, a.UID, d)
		}
		if d == "/" || d == "." {
			return nil
		}
	}
}

func (a Account) canSearch(st *syscall.Stat_t) bool {
	switch {
	case int(st.Uid) == a.UID:
		return st.Mode&0o100 != 0
	case int(st.Gid) == a.GID:
		return st.Mode&0o010 != 0
	default:
		return st.Mode&0o001 != 0
	}
}
