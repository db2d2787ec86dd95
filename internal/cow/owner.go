package cow

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Owner is who the files of a clone belong to, when not its source's
// owners: the server id a slot's server runs as (internal/svcuser), so it
// may write its own clone and nothing else.
type Owner struct {
	UID, GID int
	// Shared, when not 0, is a group whose files (regular, group
	// read-write) ChownTree leaves as they are: a sealed template's files
	// every server id may write through that group (svcuser.DataGID).
	// Chowning them would make btrfs copy the snapshot's metadata they
	// share with the template.
	Shared int
	// Chowns, when set, lists what ChownTree gives to the owner, read
	// once from the clone's source (ListChowns): a snapshot is the
	// source's exact copy, so each snapshot of it is chowned without a
	// walk (a directory listing and a stat per entry) of its own.
	Chowns *Chowns
}

// Chowns is what ChownTree gives to an owner in a snapshot of one tree:
// every directory and symlink, and every file but the read-write regular
// files of group shared, as paths relative to the tree's top.
type Chowns struct {
	shared int
	rel    []string
}

// ListChowns walks src once and lists what ChownTree would give to an
// owner whose Shared is shared in a snapshot of src.
func ListChowns(src string, shared int) (*Chowns, error) {
	p, err := walk(src)
	if err != nil {
		return nil, fmt.Errorf("list what a clone of %s gives to its owner: %w", src, err)
	}
	c := &Chowns{shared: shared}
	for _, d := range p.dirs[1:] { // the top is chowned apart
		c.rel = append(c.rel, d.rel)
	}
	for _, l := range p.links {
		c.rel = append(c.rel, l.rel)
	}
	for _, f := range p.files {
		if !sharedFile(&f.st, shared) {
			c.rel = append(c.rel, f.rel)
		}
	}
	return c, nil
}

// sharedFile reports whether st is a regular file group shared may read
// and write: one no owner needs (Owner.Shared).
func sharedFile(st *unix.Stat_t, shared int) bool {
	return shared != 0 && int(st.Gid) == shared && st.Mode&unix.S_IFMT == unix.S_IFREG && st.Mode&0o060 == 0o060
}

func (o *Owner) set(st *unix.Stat_t) { st.Uid, st.Gid = uint32(o.UID), uint32(o.GID) }

// Cloner is a backend that can give a clone's files to an owner as it
// makes them; every backend of this package is one.
type Cloner interface {
	CloneAs(src, dst string, own *Owner) error
}

// CloneAs clones src to dst with backend b, every file of the copy
// belonging to own (nil: as Clone). A backend that is not a Cloner clones,
// then chowns the tree.
func CloneAs(b Backend, src, dst string, own *Owner) error {
	if c, ok := b.(Cloner); ok {
		return c.CloneAs(src, dst, own)
	}
	if err := b.Clone(src, dst); err != nil {
		return err
	}
	if own == nil {
		return nil
	}
	if err := own.ChownTree(dst); err != nil {
		_ = b.Remove(dst)
		return err
	}
	return nil
}

// ChownTree gives every entry under dir (dir included, symlinks not
// followed) to o, but o.Shared's files (see Owner), walking with one
// open directory at a time: what CloneAs does after a btrfs snapshot.
// With o.Chowns (of the same Shared) it gives the entries listed there
// instead of walking: dir must be a snapshot of the tree they were read
// from.
func (o *Owner) ChownTree(dir string) error {
	if err := unix.Lchown(dir, o.UID, o.GID); err != nil {
		return fmt.Errorf("chown %s: %w", dir, err)
	}
	if o.Chowns != nil && o.Chowns.shared == o.Shared {
		return o.chownListed(dir)
	}
	return o.chownIn(dir)
}

// chownListed gives o.Chowns' entries under dir to o. The listed paths
// go through directories only (ListChowns descends no symlink), and
// their last component is not followed.
func (o *Owner) chownListed(dir string) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("chown under %s: %w", dir, err)
	}
	defer unix.Close(fd)
	for _, rel := range o.Chowns.rel {
		if err := unix.Fchownat(fd, rel, o.UID, o.GID, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return fmt.Errorf("chown %s/%s: %w", dir, rel, err)
		}
	}
	return nil
}

func (o *Owner) chownIn(dir string) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("chown under %s: %w", dir, err)
	}
	f := os.NewFile(uintptr(fd), dir)
	defer f.Close()
	ents, err := f.ReadDir(-1)
	if err != nil {
		return fmt.Errorf("chown under %s: %w", dir, err)
	}
	for _, e := range ents {
		if o.Shared != 0 && !e.IsDir() {
			var st unix.Stat_t
			if err := unix.Fstatat(fd, e.Name(), &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				return fmt.Errorf("chown %s/%s: %w", dir, e.Name(), err)
			}
			if sharedFile(&st, o.Shared) {
				continue
			}
		}
		if err := unix.Fchownat(fd, e.Name(), o.UID, o.GID, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return fmt.Errorf("chown %s/%s: %w", dir, e.Name(), err)
		}
		if e.IsDir() {
			if err := o.chownIn(dir + "/" + e.Name()); err != nil {
				return err
			}
		}
	}
	return nil
}
