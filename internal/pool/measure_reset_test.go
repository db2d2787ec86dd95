package pool

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"log/slog"

	"github.com/pristinedb/pristine/internal/demo"
	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/mariadb/mariadbtest"
	"github.com/pristinedb/pristine/internal/template"
	"github.com/pristinedb/pristine/internal/template/templatetest"
)

// TestMeasureResetPaths measures where a reset's CPU goes, for the full
// reset (kill, clone, start) and the in-place one, on the demo template
// (and an empty table and one of 1,500 rows with a counter) on a btrfs
// scratch filesystem: one slot, one row deleted per lease, nothing
// written, one row updated, or three added to either table, each 20
// times; medians. It only reports; set PRISTINE_MEASURE_RESET=1 to run it.
//
// CPU is split by who spends it: the old server dying (its CPU at exit,
// from this process's reaped children, less what it had spent when it was
// released), the new server until ready (/proc/PID/stat, with its minor
// page faults), this process (the pool's own work: clone, admin queries,
// file walks; getrusage), and btrfs' kernel threads (btrfs-cleaner and
// btrfs-transaction, whose CPU other filesystems' work on the machine adds
// to).
func TestMeasureResetPaths(t *testing.T) {
	if os.Getenv("PRISTINE_MEASURE_RESET") == "" {
		t.Skip("a measurement: set PRISTINE_MEASURE_RESET=1 to run it")
	}
	var sqlText bytes.Buffer
	if err := demo.Write(&sqlText, demo.Options{Scale: 1, MySQL: mariadbtest.Binary(t).Flavor == mariadb.MySQL}); err != nil {
		t.Fatal(err)
	}
	// A table the template has empty, as most of a suite's tables are
	// before its tests write them, and one with rows and a counter.
	sqlText.WriteString("\nCREATE TABLE events (id BIGINT AUTO_INCREMENT PRIMARY KEY, kind VARCHAR(20), at DATETIME, KEY ix_kind (kind)) ENGINE=InnoDB;\n" +
		"CREATE TABLE notes (id INT AUTO_INCREMENT PRIMARY KEY, body VARCHAR(80), KEY ix_body (body)) ENGINE=InnoDB;\n" +
		"INSERT INTO notes (body) SELECT CONCAT('note ', id) FROM return_reasons;\n")
	st := templatetest.NewScratchBuilder(t, "btrfs", 4<<30)
	m := templatetest.Build(t, st, "demo", sqlText.String(), template.BuildOptions{Workers: 4})
	p, err := Up(context.Background(), st.Catalog(), st.Binary(), m, Options{Size: 1, Profile: mariadb.DefaultProfile(),
		Log: slog.New(slog.NewTextHandler(phaseLog{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Down(context.Background())
	// Wall times of the full reset's steps, by wrapping the pool's ops.
	var mu sync.Mutex
	var cloneAt, cloneEnd, bootEnd time.Time
	clone, boot := p.ops.clone, p.ops.boot
	p.ops.clone = func(ctx context.Context, s *slot) error {
		mu.Lock()
		cloneAt = time.Now()
		mu.Unlock()
		err := clone(ctx, s)
		mu.Lock()
		cloneEnd = time.Now()
		mu.Unlock()
		return err
	}
	p.ops.boot = func(ctx context.Context, s *slot) (*booted, error) {
		b, err := boot(ctx, s)
		mu.Lock()
		bootEnd = time.Now()
		mu.Unlock()
		return b, err
	}
	t.Logf("load average before: %s", loadavg())
	for _, c := range []struct{ path, write string }{
		{"full", "DELETE FROM return_reasons LIMIT 1"},
		{"inplace", "DELETE FROM return_reasons LIMIT 1"},
		{"inplace, nothing written", "DO 1"},
		{"inplace, a row updated", "UPDATE return_reasons SET name = 'changed' ORDER BY id LIMIT 1"},
		{"inplace, rows added to an empty table", "INSERT INTO events (kind, at) VALUES ('a', NOW()), ('b', NOW()), ('c', NOW())"},
		{"inplace, rows added to a table with rows", "INSERT INTO notes (body) VALUES ('a'), ('b'), ('c')"},
	} {
		path := c.path
		if path == "full" {
			t.Setenv(inplaceEnv, "off")
		} else {
			os.Unsetenv(inplaceEnv)
		}
		var rows [][]float64
		for i := 0; i < 21; i++ {
			l := leaseIn(t, p)
			db := openLease(t, l)
			if _, err := db.Exec(c.write); err != nil {
				t.Fatal(err)
			}
			db.Close()
			p.mu.Lock()
			oldPID := p.slots[0].srv.PID()
			p.mu.Unlock()
			oldCPU, _ := procCPU(oldPID)
			oldTicks := procTicks(oldPID)
			self0, kids0 := rusage(syscall.RUSAGE_SELF), rusage(syscall.RUSAGE_CHILDREN)
			btrfs0 := btrfsThreadsCPU()
			start := time.Now()
			if _, err := p.Release(context.Background(), l.ID, Dirty); err != nil {
				t.Fatal(err)
			}
			waitFor(t, p, "the slot ready again", func() bool { return p.slots[0].state == Ready })
			wall := time.Since(start)
			p.mu.Lock()
			newPID := p.slots[0].srv.PID()
			p.mu.Unlock()
			self, kids := rusage(syscall.RUSAGE_SELF)-self0, rusage(syscall.RUSAGE_CHILDREN)-kids0
			time.Sleep(300 * time.Millisecond) // the cleaner deletes the old snapshot in the background
			btrfs := btrfsThreadsCPU() - btrfs0
			var exitCPU, newCPU, faults float64
			if newPID != oldPID {
				exitCPU = kids - oldTicks // both counted by the kernel in ticks
				newCPU, faults = procCPU(newPID)
			} else {
				now, _ := procCPU(oldPID)
				newCPU = now - oldCPU // the same server's work
			}
			var kill, cl, bt float64
			mu.Lock()
			if cloneAt.After(start) {
				kill, cl, bt = ms(cloneAt.Sub(start)), ms(cloneEnd.Sub(cloneAt)), ms(bootEnd.Sub(cloneEnd))
			}
			mu.Unlock()
			if i > 0 { // the first of each path warms caches
				rows = append(rows, []float64{ms(wall), exitCPU, newCPU, faults, self, btrfs, exitCPU + newCPU + self + btrfs, kill, cl, bt})
			}
		}
		med := make([]float64, 10)
		for c := range med {
			col := make([]float64, len(rows))
			for r := range rows {
				col[r] = rows[r][c]
			}
			sort.Float64s(col)
			med[c] = col[len(col)/2]
		}
		t.Logf("| %s | %.1f ms | %.1f / %.1f / %.1f ms | %.1f ms | %.1f ms | %.0f | %.1f ms | %.1f ms | %.1f ms |", path, med[0], med[7], med[8], med[9], med[1], med[2], med[3], med[4], med[5], med[6])
	}
	t.Logf("columns: path | wall | wall of kill / clone / boot (exec, listening, accounts, marks) | old server exit CPU | server CPU (new server to ready, or the same server's) | its minor faults | pool process CPU | btrfs threads CPU | CPU sum")
	t.Logf("load average after: %s; paths %v", loadavg(), p.Status(false).Stats.ResetPaths)
}

// TestMeasureIdleAfterReset measures an in-place reset of one table with
// an AUTO_INCREMENT counter whose holder deleted a row (inplaceSchema's
// child), and what the reset costs after it: the CPU of the slot's server
// (procCPU) and of this process (the pool's work, rusage) from the
// release until the slot is ready again, then while it stays ready and
// idle for 1.5 s; 10 times, means. It only reports; set
// PRISTINE_MEASURE_RESET=1 to run it.
func TestMeasureIdleAfterReset(t *testing.T) {
	if os.Getenv("PRISTINE_MEASURE_RESET") == "" {
		t.Skip("a measurement: set PRISTINE_MEASURE_RESET=1 to run it")
	}
	p, _ := inplacePool(t)
	ctx := context.Background()
	const rounds, idle = 10, 1500 * time.Millisecond
	var wall, resetServer, resetOwn, server, own float64
	for round := 0; round < rounds; round++ {
		l := leaseIn(t, p)
		if _, err := openLease(t, l).Exec("DELETE FROM child WHERE id = 3"); err != nil {
			t.Fatal(err)
		}
		pid := slotPID(p, l.Slot)
		r0, ro0, start := cpuMS(pid), rusage(syscall.RUSAGE_SELF), time.Now()
		if _, err := p.Release(ctx, l.ID, Dirty); err != nil {
			t.Fatal(err)
		}
		waitFor(t, p, "the slot reset", func() bool { return p.slots[l.Slot].state == Ready })
		w := ms(time.Since(start))
		s0, o0 := cpuMS(pid), rusage(syscall.RUSAGE_SELF)
		time.Sleep(idle)
		s1, o1 := cpuMS(pid), rusage(syscall.RUSAGE_SELF)
		t.Logf("round %d: the reset %.1f ms, CPU server %.1f / pool %.1f ms; in the %s after it, server %.1f / pool %.1f ms", round, w, s0-r0, o0-ro0, idle, s1-s0, o1-o0)
		wall, resetServer, resetOwn = wall+w, resetServer+s0-r0, resetOwn+o0-ro0
		server, own = server+s1-s0, own+o1-o0
	}
	t.Logf("%s, in-place resets %d; mean reset %.1f ms, CPU server %.1f / pool %.1f ms; mean CPU in the %s after it: server %.1f / pool %.1f ms; load average %s",
		p.bin.Flavor, p.Status(false).Stats.ResetPaths[PathInPlace], wall/rounds, resetServer/rounds, resetOwn/rounds, idle, server/rounds, own/rounds, loadavg())
}

// slotPID is the process id of slot i's server.
func slotPID(p *Pool, i int) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.slots[i].srv.PID()
}

// cpuMS is procCPU's CPU alone.
func cpuMS(pid int) float64 {
	ms, _ := procCPU(pid)
	return ms
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// procCPU is a process's CPU in ms and its minor faults: the time its
// live threads ran (/proc/PID/task/*/schedstat, in ns) plus what its
// ended threads spent (the process's ticks, procTicks, less the live
// threads' ticks).
func procCPU(pid int) (float64, float64) {
	dir := "/proc/" + strconv.Itoa(pid)
	b, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return 0, 0
	}
	s := string(b)
	minflt, _ := strconv.ParseFloat(strings.Fields(s[strings.LastIndexByte(s, ')')+1:])[7], 64)
	ticks, ran := procTicks(pid), 0.0
	tasks, _ := os.ReadDir(dir + "/task")
	for _, t := range tasks {
		task := dir + "/task/" + t.Name()
		if ss, err := os.ReadFile(task + "/schedstat"); err == nil {
			if n, err := strconv.ParseFloat(strings.Fields(string(ss))[0], 64); err == nil {
				ran += n / 1e6
			}
		}
		ticks -= statTicks(task + "/stat")
	}
	if ticks < 0 {
		ticks = 0
	}
	return ran + ticks, minflt
}

// procTicks is a process's user+system CPU in ms from /proc/PID/stat, in
// 10 ms ticks, as a reaped child's CPU is counted.
func procTicks(pid int) float64 { return statTicks("/proc/" + strconv.Itoa(pid) + "/stat") }

// statTicks is the user+system CPU in ms of a process's or thread's stat
// file, in 10 ms ticks; 0 when it cannot be read.
func statTicks(path string) float64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) * 10
}

// rusage is getrusage(who)'s user+system CPU in ms.
func rusage(who int) float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(who, &ru)
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e6
}

// btrfsThreadsCPU sums the CPU in ms of the kernel's btrfs-cleaner and
// btrfs-transaction threads (every btrfs filesystem's).
func btrfsThreadsCPU() float64 {
	ents, _ := os.ReadDir("/proc")
	var sum float64
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		comm, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
		c := strings.TrimSpace(string(comm))
		if c == "btrfs-cleaner" || c == "btrfs-transacti" {
			cpu, _ := procCPU(pid)
			sum += cpu
		}
	}
	return sum
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return fmt.Sprint(strings.Join(f[:3], " "))
}

// phaseLog passes the pool's in-place phase lines to the test's log.
type phaseLog struct{ t *testing.T }

func (w phaseLog) Write(b []byte) (int, error) {
	if bytes.Contains(b, []byte("phases=")) {
		w.t.Log(strings.TrimSpace(string(b)))
	}
	return len(b), nil
}
