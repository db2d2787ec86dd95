package mountinfo

import (
	"strings"
	"testing"
)

func TestUnescape(t *testing.T) {
	for in, want := range map[string]string{`/a\040b`: "/a b", `/plain`: "/plain", `/x\134y`: `/x\y`, `/trail\04`: `/trail\04`} {
		if got := unescape(in); got != want {
			t.Errorf("unescape(%q) = %q; want %q", in, got, want)
		}
	}
}

func TestParse(t *testing.T) {
	// As a chroot whose / is not a mount point sees it: no line for /.
	const text = `27 1 0:25 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw
31 27 0:27 / /dev/shm rw,nosuid,nodev shared:4 - tmpfs tmpfs rw,size=8G
40 31 7:0 / /var/lib/pristine/data\040x rw,relatime shared:20 master:3 - btrfs /dev/loop0 rw,ssd,space_cache=v2
`
	ms, err := parse(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 3 {
		t.Fatalf("parsed %d mounts, want 3: %+v", len(ms), ms)
	}
	want := Mount{Dev: "7:0", Point: "/var/lib/pristine/data x", FSType: "btrfs", Source: "/dev/loop0", Options: "rw,ssd,space_cache=v2", MountOptions: "rw,relatime"}
	if ms[2] != want {
		t.Errorf("mount with optional fields and an escape = %+v, want %+v", ms[2], want)
	}
	if _, err := parse(strings.NewReader("1 2 3\n")); err == nil {
		t.Error("a malformed line was accepted")
	}
}

// TestReadThisMachine reads the real table. It does not assume that / is
// a mount point (in a chroot it is not), only that /proc is mounted, which
// reading /proc/self/mountinfo needs anyway.
func TestReadThisMachine(t *testing.T) {
	ms, err := Read()
	if err != nil {
		t.Fatal(err)
	}
	m, err := At("/proc")
	if err != nil || m == nil || m.FSType != "proc" {
		t.Fatalf("At(/proc) = %+v, %v over %d mounts; want the proc filesystem", m, err, len(ms))
	}
	if root, _ := At("/"); root != nil && root.FSType == "" {
		t.Errorf("the mount at / has no filesystem type: %+v", root)
	}
}

func TestOption(t *testing.T) {
	m := Mount{Options: "rw,compress=zstd:3,ssd,space_cache=v2"}
	for name, want := range map[string]string{"compress": "zstd:3", "space_cache": "v2", "ssd": ""} {
		if v, ok := m.Option(name); !ok || v != want {
			t.Errorf("Option(%q) = %q, %v; want %q", name, v, ok, want)
		}
	}
	if _, ok := m.Option("compress-force"); ok {
		t.Error("Option(compress-force) found in options without it")
	}
}

func TestOf(t *testing.T) {
	m, err := Of("/proc/self")
	if err != nil || m == nil || m.Point != "/proc" {
		t.Errorf("Of(/proc/self) = %+v, %v; want the mount at /proc", m, err)
	}
}
