package pool

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/template"
	"github.com/pristinedb/pristine/internal/template/templatetest"
)

// Every counter release --unchanged's write mark names exists on the
// installed server: a name that does not (COM_SET_PASSWORD on MariaDB
// 10.11) adds nothing and gives a false sense of coverage.
func TestWriteMarkCounters(t *testing.T) {
	st := templatetest.NewBuilder(t, "auto")
	m := templatetest.Build(t, st, "app", "CREATE TABLE t (id INT PRIMARY KEY);", template.BuildOptions{})
	p, err := Up(context.Background(), st.Catalog(), st.Binary(), m, Options{Size: 1, Profile: mariadb.DefaultProfile()})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Down(context.Background())
	p.mu.Lock()
	admin := p.slots[0].srv.(*liveServer).admin
	p.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	status, err := mariadb.ReadStatus(ctx, admin, "GLOBAL", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range writeCounterNames(st.Binary().Flavor) {
		if _, ok := status[name]; !ok {
			t.Errorf("the write mark counts %s, which %s does not have", name, st.Binary().Version)
		}
	}
}

// A slot server that stops on its disk cap is reported disk_full: from
// InnoDB's own words (case and all, however long the crash report after
// them), and whenever a server over its watched cap exits on its own.
func TestDiskCapExitIsDiskFull(t *testing.T) {
	exited := exec.Command("false").Run()
	var ee *exec.ExitError
	if !errors.As(exited, &ee) {
		t.Fatalf("false: %v", exited)
	}
	crash := strings.Repeat("0x55d0c0ffee mariadbd(handle_fatal_signal+0x1)\n", 120)
	for _, tc := range []struct {
		name, log string
		overCap   bool
		want      string
	}{
		{"InnoDB write failed on EDQUOT", "2026-11-24 [ERROR] InnoDB: Write to file ./app/blobs.ibd failed at offset 104857600, 1048576 bytes should have been written, only 0 were written. Operating system error number 122. Check that your OS and file system support files of this size. Check also that the disk is not full or a disk quota exceeded.\n[ERROR] [FATAL] InnoDB: fatal error\n" + crash, false, ReasonDiskFull},
		{"ENOSPC", "[ERROR] mariadbd: Error writing file './ib_logfile0' (Errcode: 28 \"No space left on device\")\n", false, ReasonDiskFull},
		{"other crash", "[ERROR] mariadbd got signal 11 ;\n" + crash, false, ReasonExited},
		{"other crash over the cap", "[ERROR] mariadbd got signal 6 ;\n" + crash, true, ReasonDiskFull},
	} {
		t.Run(tc.name, func(t *testing.T) {
			label, detail := classifyExit(42, exited, "tail", tc.log)
			label, detail = overCapExit(&slot{overCap: tc.overCap}, label, detail)
			if label != tc.want {
				t.Errorf("labelled %s (%s), want %s", label, detail, tc.want)
			}
		})
	}
}

// The numbers docs/security.md gives for a slot's connection and memory
// bounds.
func TestSlotBounds(t *testing.T) {
	for _, tc := range []struct{ maxConn, units, want int }{
		{64, 1, 60}, {64, 4, 15}, {3, 1, 1}, {64, 100, 1},
	} {
		if got := leaseConnections(tc.maxConn, tc.units); got != tc.want {
			t.Errorf("leaseConnections(%d, %d) = %d, want %d", tc.maxConn, tc.units, got, tc.want)
		}
	}
	if got := memLimit(16<<20, 256<<20); got != 656<<20 {
		t.Errorf("memLimit(16 MiB, 256 MiB) = %d MiB, want 656", got>>20)
	}
	if a := memoryArgs(0); a != nil {
		t.Errorf("memoryArgs(0) = %v, want none", a)
	}
	a := strings.Join(memoryArgs(64<<20), " ")
	for _, want := range []string{"--max-heap-table-size=16777216", "--maximum-max-heap-table-size=67108864",
		"--maximum-tmp-table-size=67108864", "--loose-max-session-mem-used=67108864", "--loose-maximum-max-session-mem-used=67108864"} {
		if !strings.Contains(a, want) {
			t.Errorf("memoryArgs(64 MiB) = %s, lacks %s", a, want)
		}
	}
}

// TestOwnMoves: a connection's moves are the rise of the sum of its
// write counters between two reads; a fall is an error, not a move.
func TestOwnMoves(t *testing.T) {
	f := mariadb.MariaDB
	for _, c := range []struct {
		name      string
		pre, post map[string]string
		want      int64
		err       string
	}{
		{"a lock and a kill round", map[string]string{"COM_ALTER_USER": "3", "HANDLER_UPDATE": "10"},
			map[string]string{"COM_ALTER_USER": "4", "HANDLER_UPDATE": "11"}, 2, ""},
		{"no move", map[string]string{"HANDLER_WRITE": "5"}, map[string]string{"HANDLER_WRITE": "5"}, 0, ""},
		{"went back", map[string]string{"HANDLER_WRITE": "5"}, map[string]string{"HANDLER_WRITE": "4"}, 0, "went back"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := ownMoves(c.pre, c.post, f)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want %q", err, c.err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("ownMoves = %d, %v; want %d", got, err, c.want)
			}
		})
	}
}
