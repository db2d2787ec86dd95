package svcuser

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestCheckReachable(t *testing.T) {
	// An account that is nobody's owner and in nobody's group: only the
	// "other" search bit lets it through.
	a := Account{Name: "probe", UID: 54321, GID: 54321, Drop: true}
	for _, tc := range []struct {
		name string
		mode os.FileMode
		ok   bool
	}{
		{"private parent", 0o700, false},
		{"group only", 0o750, false},
		{"search for others", 0o711, true},
		{"readable by all", 0o755, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parent := t.TempDir()
			if err := os.Chmod(filepath.Dir(parent), 0o711); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(parent, tc.mode); err != nil {
				t.Fatal(err)
			}
			err := a.CheckReachable(filepath.Join(parent, "data"))
			if tc.ok && err != nil {
				t.Fatalf("mode %04o: %v", tc.mode, err)
			}
			if !tc.ok && !errors.Is(err, ErrUnreachable) {
				t.Fatalf("mode %04o: err = %v, want ErrUnreachable", tc.mode, err)
			}
		})
	}
	if err := (Account{}).CheckReachable("/root/x/y"); err != nil {
		t.Errorf("without Drop nothing is checked: %v", err)
	}
}

func TestGetNeverRoot(t *testing.T) {
	a, err := Get()
	if err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		if !a.Drop || a.UID == 0 || a.GID == 0 || a.Name != Name {
			t.Fatalf("as root, servers would run as %+v", a)
		}
		if c := a.Credential(); c == nil || c.Uid == 0 || len(c.Groups) != 1 || c.Groups[0] != DataGID {
			t.Fatalf("credential %+v", c)
		}
		return
	}
	if a.Drop || a.UID != os.Geteuid() || a.Credential() != nil {
		t.Fatalf("as uid %d, servers would run as %+v", os.Geteuid(), a)
	}
}
