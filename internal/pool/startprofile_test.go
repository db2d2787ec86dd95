package pool_test

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pristinedb/pristine/internal/catalog"
	"github.com/pristinedb/pristine/internal/demo"
	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/mariadb/mariadbtest"
	"github.com/pristinedb/pristine/internal/pool"
	"github.com/pristinedb/pristine/internal/svcuser"
	"github.com/pristinedb/pristine/internal/template"
	"github.com/pristinedb/pristine/internal/template/templatetest"
)

// TestMeasureSlotStart splits a slot's start into its phases, on a btrfs
// and an XFS (reflink) scratch filesystem, cold (the first slots on a fresh
// filesystem) and warm (the same again): the clone, exec to listening, the
// first query; the server's user and system CPU and page faults from
// /proc/PID/stat; what it wrote (/proc/PID/io) and which files of the clone
// it changed; its resident set (smaps_rollup) idle and after a soak's kind
// of queries. It only reports; set PRISTINE_MEASURE_START=1 to run it
// (PRISTINE_MEASURE_FS=btrfs or xfs for one filesystem,
// PRISTINE_MEASURE_EXTRA="--opt=v ..." adds server options to compare;
// PRISTINE_MEASURE_FS=copy uses the copy backend on /dev/shm, where no
// scratch filesystem can be made, as in the server roots of
// scripts/servers.sh; PRISTINE_MEASURE_N sets the slots per round, default
// 8; PRISTINE_MEASURE_THREADS=1 lists the first slot's threads by CPU).
// On MySQL the template is the demo schema in MySQL's dialect.
func TestMeasureSlotStart(t *testing.T) {
	if os.Getenv("PRISTINE_MEASURE_START") == "" {
		t.Skip("a measurement: set PRISTINE_MEASURE_START=1 to run it")
	}
	fss := []string{"btrfs", "xfs"}
	if f := os.Getenv("PRISTINE_MEASURE_FS"); f != "" {
		fss = []string{f}
	}
	extra := strings.Fields(os.Getenv("PRISTINE_MEASURE_EXTRA"))
	n := 8
	if v, err := strconv.Atoi(os.Getenv("PRISTINE_MEASURE_N")); err == nil && v > 0 {
		n = v
	}
	var sqlText bytes.Buffer
	if err := demo.Write(&sqlText, demo.Options{Scale: 1, MySQL: mariadbtest.Binary(t).Flavor == mariadb.MySQL}); err != nil {
		t.Fatal(err)
	}
	for _, fsName := range fss {
		t.Run(fsName, func(t *testing.T) {
			var st *template.Builder
			if fsName == "copy" {
				st = templatetest.NewBuilder(t, "copy")
			} else {
				st = templatetest.NewScratchBuilder(t, fsName, 4<<30)
			}
			m := templatetest.Build(t, st, "demo", sqlText.String(), template.BuildOptions{Workers: 4})
			for _, round := range []string{"cold", "warm"} {
				var rows []startSample
				for i := 0; i < n; i++ {
					rows = append(rows, startOne(t, st, m, fmt.Sprintf("%s-%d", round, i), extra))
				}
				t.Logf("%s %s: median of %d slots started one at a time:\n%s", fsName, round, n, medianSample(rows))
				if round == "cold" {
					t.Logf("%s files the server changed in the clone at start (first slot):\n%s", fsName, rows[0].changed)
				}
			}
		})
	}
}

// startSample is one slot start, phase by phase.
type startSample struct {
	clone, listen, query       float64 // milliseconds
	utime, stime               float64 // milliseconds of CPU
	minflt, majflt             float64
	wchar, writeBytes          float64 // bytes
	changedBytes               float64 // bytes of files changed or made in the clone
	rssIdle, pssIdle, anonIdle float64 // kB
	rssUsed, pssUsed, anonUsed float64 // kB, after soak-like queries
	threads                    float64
	changed                    string
}

func startOne(t *testing.T, st *template.Builder, m *catalog.Meta, name string, extra []string) startSample {
	t.Helper()
	var s startSample
	dir := filepath.Join(st.Catalog().Root().Data(), "measure", name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	src := st.Catalog().DataDir(m.Hash)
	t0 := time.Now()
	if err := st.Catalog().Backend().Clone(src, data); err != nil {
		t.Fatal(err)
	}
	s.clone = ms(time.Since(t0))
	// The server runs as the shared servers' account here (a pool claims
	// an id per slot): it must own its clone.
	acct, err := svcuser.Get()
	if err != nil {
		t.Fatal(err)
	}
	if err := acct.OwnTree(data); err != nil {
		t.Fatal(err)
	}
	before := fileTimes(t, data)
	prof := mariadb.DefaultProfile()
	prof.LogFileSize = m.LogFileSize
	run := filepath.Join(st.Catalog().Root().Path, "run", "m", name)
	t1 := time.Now()
	in, err := mariadb.Start(st.Binary(), mariadb.Config{Datadir: data, RunDir: run, Profile: prof, Extra: extra, AdminPassword: st.Catalog().Admin()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		in.Kill()
		if err := st.Catalog().Backend().Remove(data); err != nil {
			t.Error(err)
		}
		os.RemoveAll(run)
	}()
	for {
		if c, err := netDialUnix(in.Config.Socket()); err == nil {
			c.Close()
			break
		}
		if !in.Running() {
			t.Fatal(in.LogTail(5))
		}
		time.Sleep(time.Millisecond)
	}
	s.listen = ms(time.Since(t1))
	t2 := time.Now()
	if err := in.WaitReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.query = ms(time.Since(t2))
	pid := in.PID()
	stat := procStat(t, pid)
	s.utime, s.stime, s.minflt, s.majflt = stat[0], stat[1], stat[2], stat[3]
	io := procKV(t, pid, "io")
	s.wchar, s.writeBytes = io["wchar"], io["write_bytes"]
	sm := procKV(t, pid, "smaps_rollup")
	s.rssIdle, s.pssIdle, s.anonIdle = sm["Rss"], sm["Pss"], sm["Anonymous"]
	s.threads = procKV(t, pid, "status")["Threads"]
	if os.Getenv("PRISTINE_MEASURE_SMAPS") != "" && strings.HasSuffix(name, "-0") {
		t.Logf("largest resident mappings of %s:\n%s", name, topMappings(t, pid))
	}
	if os.Getenv("PRISTINE_MEASURE_THREADS") != "" && strings.HasSuffix(name, "-0") {
		t.Logf("threads of %s by CPU at ready:\n%s", name, threadCPU(t, pid))
	}
	s.changed, s.changedBytes = changedFiles(t, data, before)
	soakQueries(t, in)
	sm = procKV(t, pid, "smaps_rollup")
	s.rssUsed, s.pssUsed, s.anonUsed = sm["Rss"], sm["Pss"], sm["Anonymous"]
	return s
}

// soakQueries does what a soak client does on a lease, and a bit more:
// information_schema, a read of every table, a write.
func soakQueries(t *testing.T, in *mariadb.Instance) {
	t.Helper()
	db, err := in.Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query("SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES WHERE ENGINE='InnoDB' AND TABLE_SCHEMA NOT IN ('mysql','sys')")
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var s, n string
		if err := rows.Scan(&s, &n); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, "`"+s+"`.`"+n+"`")
	}
	rows.Close()
	for _, tb := range tables {
		var c int64
		if err := db.QueryRow("SELECT COUNT(*) FROM " + tb).Scan(&c); err != nil {
			t.Fatal(err)
		}
	}
	// 2,000 rows: MariaDB's sequence engine, or a cross join of a
	// recursive CTE on MySQL (which has neither seq_1_to_N nor more than
	// 1,000 recursions by default).
	insert := "INSERT INTO soak.w SELECT seq, SHA2(seq, 256) FROM soak.seq_1_to_2000"
	if in.Binary.Flavor == mariadb.MySQL {
		insert = "INSERT INTO soak.w WITH RECURSIVE s(n) AS (SELECT 0 UNION ALL SELECT n+1 FROM s WHERE n < 49) SELECT a.n*40+b.n+1, SHA2(a.n*40+b.n, 256) FROM s a JOIN s b ON b.n < 40"
	}
	for _, q := range []string{"CREATE DATABASE IF NOT EXISTS soak", "CREATE TABLE soak.w (id INT PRIMARY KEY, v VARCHAR(64))", insert} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// procStat returns utime and stime (ms), minflt and majflt of pid.
func procStat(t *testing.T, pid int) [4]float64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	// f[0] is field 3 (state): minflt is field 10, majflt 12, utime 14, stime 15.
	num := func(field int) float64 { v, _ := strconv.ParseFloat(f[field-3], 64); return v }
	const tick = 10 // ms per clock tick (USER_HZ 100)
	return [4]float64{num(14) * tick, num(15) * tick, num(10), num(12)}
}

// procKV reads a /proc/PID file of "key: value [kB]" lines.
func procKV(t *testing.T, pid int, file string) map[string]float64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/" + file)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		out[k], _ = strconv.ParseFloat(f[0], 64)
	}
	return out
}

type fileState struct {
	size  int64
	mtime time.Time
}

func fileTimes(t *testing.T, dir string) map[string]fileState {
	t.Helper()
	out := map[string]fileState{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		out[p] = fileState{fi.Size(), fi.ModTime()}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// changedFiles lists the files of dir made or modified since before, with
// their sizes, and the sum of those sizes.
func changedFiles(t *testing.T, dir string, before map[string]fileState) (string, float64) {
	t.Helper()
	var lines []string
	var sum float64
	for p, now := range fileTimes(t, dir) {
		was, ok := before[p]
		if ok && was == now {
			continue
		}
		rel, _ := filepath.Rel(dir, p)
		what := "new"
		if ok {
			what = fmt.Sprintf("modified, was %d bytes", was.size)
		}
		lines = append(lines, fmt.Sprintf("  %s: %d bytes (%s)", rel, now.size, what))
		sum += float64(now.size)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n"), sum
}

func medianSample(v []startSample) string {
	med := func(f func(startSample) float64) float64 {
		s := make([]float64, len(v))
		for i := range v {
			s[i] = f(v[i])
		}
		sort.Float64s(s)
		return s[len(s)/2]
	}
	return fmt.Sprintf("| clone ms | exec to listening ms | first query ms | user CPU ms | sys CPU ms | minor faults | major faults | wchar KiB | write_bytes KiB | files changed KiB | RSS idle MiB | PSS idle MiB | anon idle MiB | RSS used MiB | PSS used MiB | anon used MiB | threads |\n"+
		"| %.1f | %.1f | %.1f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.0f |",
		med(func(s startSample) float64 { return s.clone }), med(func(s startSample) float64 { return s.listen }),
		med(func(s startSample) float64 { return s.query }), med(func(s startSample) float64 { return s.utime }),
		med(func(s startSample) float64 { return s.stime }), med(func(s startSample) float64 { return s.minflt }),
		med(func(s startSample) float64 { return s.majflt }), med(func(s startSample) float64 { return s.wchar / 1024 }),
		med(func(s startSample) float64 { return s.writeBytes / 1024 }), med(func(s startSample) float64 { return s.changedBytes / 1024 }),
		med(func(s startSample) float64 { return s.rssIdle / 1024 }), med(func(s startSample) float64 { return s.pssIdle / 1024 }),
		med(func(s startSample) float64 { return s.anonIdle / 1024 }), med(func(s startSample) float64 { return s.rssUsed / 1024 }),
		med(func(s startSample) float64 { return s.pssUsed / 1024 }), med(func(s startSample) float64 { return s.anonUsed / 1024 }),
		med(func(s startSample) float64 { return s.threads }))
}

// threadCPU lists pid's threads by the CPU they used (user + system, from
// /proc/PID/task/TID/stat), with their names: where a start's CPU went.
func threadCPU(t *testing.T, pid int) string {
	t.Helper()
	tasks, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil {
		t.Fatal(err)
	}
	type thread struct {
		name      string
		user, sys float64
	}
	byName := map[string]*thread{}
	var all []*thread
	for _, e := range tasks {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
		name := string(b[open+1 : end])
		f := strings.Fields(string(b[end+2:]))
		u, _ := strconv.ParseFloat(f[14-3], 64)
		s, _ := strconv.ParseFloat(f[15-3], 64)
		th := byName[name]
		if th == nil {
			th = &thread{name: name}
			byName[name] = th
			all = append(all, th)
		}
		th.user += u * 10
		th.sys += s * 10
	}
	sort.Slice(all, func(i, j int) bool { return all[i].user+all[i].sys > all[j].user+all[j].sys })
	var out []string
	for _, th := range all {
		out = append(out, fmt.Sprintf("  %-16s user %4.0f ms sys %4.0f ms", th.name, th.user, th.sys))
	}
	return strings.Join(out, "\n")
}

func netDialUnix(path string) (net.Conn, error) { return net.Dial("unix", path) }

// topMappings lists the mappings of pid with the most resident memory.
func topMappings(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/smaps")
	if err != nil {
		t.Fatal(err)
	}
	type mapping struct {
		head      string
		rss, anon int
	}
	var all []mapping
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 5 && strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":"):
			all = append(all, mapping{head: line})
		case len(f) >= 2 && f[0] == "Rss:" && len(all) > 0:
			all[len(all)-1].rss, _ = strconv.Atoi(f[1])
		case len(f) >= 2 && f[0] == "Anonymous:" && len(all) > 0:
			all[len(all)-1].anon, _ = strconv.Atoi(f[1])
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].rss > all[j].rss })
	var out []string
	for i := 0; i < len(all) && i < 25; i++ {
		out = append(out, fmt.Sprintf("  rss %6d kB anon %6d kB  %s", all[i].rss, all[i].anon, all[i].head))
	}
	return strings.Join(out, "\n")
}

// TestMeasurePoolUp brings up PRISTINE_MEASURE_SLOTS (default 200) slots of
// the demo template on a btrfs (or PRISTINE_MEASURE_FS) scratch filesystem
// PRISTINE_MEASURE_RUNS times (default 3) for each start bound in
// PRISTINE_MEASURE_PARALLEL (default "0": the pool's default), then leases
// every slot and releases them all at once. It reports the median time to
// every slot ready, the CPU the servers and this process used, the reset
// p50/p99 of 200 resets at once, RSS/PSS per slot and the load average
// around each run. It only reports; set PRISTINE_MEASURE_UP=1 to run it.
func TestMeasurePoolUp(t *testing.T) {
	if os.Getenv("PRISTINE_MEASURE_UP") == "" {
		t.Skip("a measurement: set PRISTINE_MEASURE_UP=1 to run it")
	}
	env := func(k, def string) string {
		if v := os.Getenv(k); v != "" {
			return v
		}
		return def
	}
	slots, _ := strconv.Atoi(env("PRISTINE_MEASURE_SLOTS", "200"))
	runs, _ := strconv.Atoi(env("PRISTINE_MEASURE_RUNS", "3"))
	var sqlText bytes.Buffer
	if err := demo.Write(&sqlText, demo.Options{Scale: 1}); err != nil {
		t.Fatal(err)
	}
	st := templatetest.NewScratchBuilder(t, env("PRISTINE_MEASURE_FS", "btrfs"), 20<<30)
	m := templatetest.Build(t, st, "demo", sqlText.String(), template.BuildOptions{Workers: 4})
	for _, par := range strings.Split(env("PRISTINE_MEASURE_PARALLEL", "0"), ",") {
		n, _ := strconv.Atoi(par)
		var ups, resets []float64
		for r := 0; r < runs; r++ {
			load0 := loadAvg()
			self0 := procStat(t, os.Getpid())
			start := time.Now()
			workers, _ := strconv.Atoi(os.Getenv("PRISTINE_MEASURE_RESET_WORKERS"))
			p, err := pool.Up(context.Background(), st.Catalog(), st.Binary(), m, pool.Options{Size: slots, Parallel: n, ResetWorkers: workers})
			if err != nil {
				t.Fatal(err)
			}
			up := time.Since(start).Seconds()
			self1 := procStat(t, os.Getpid())
			var srvUser, srvSys, rss, pss, anon float64
			for _, s := range p.Status(true).Slots {
				c := procStat(t, s.PID)
				srvUser, srvSys = srvUser+c[0], srvSys+c[1]
				sm := procKV(t, s.PID, "smaps_rollup")
				rss, pss, anon = rss+sm["Rss"], pss+sm["Pss"], anon+sm["Anonymous"]
			}
			k := float64(slots)
			var leases []*pool.Lease
			for i := 0; i < slots; i++ {
				leases = append(leases, lease(t, p))
			}
			released := time.Now()
			for _, l := range leases {
				if _, err := p.Release(context.Background(), l.ID, pool.Dirty); err != nil {
					t.Fatal(err)
				}
			}
			for p.Status(false).States[pool.Ready] < slots {
				time.Sleep(20 * time.Millisecond)
			}
			resetAll := time.Since(released).Seconds()
			ps := p.Status(false)
			if err := p.Down(context.Background()); err != nil {
				t.Fatal(err)
			}
			ups, resets = append(ups, up), append(resets, ps.ResetP99MS)
			t.Logf("parallel %d run %d: %d slots ready in %.2fs (load %s -> %s); CPU during up: servers user %.1fs sys %.1fs, pristine user %.1fs sys %.1fs; per slot RSS %.1f MiB, PSS %.1f MiB, anon %.1f MiB; %d resets at once p50 %.0f ms p99 %.0f ms max %.0f ms, all ready again %.1fs after the release",
				n, r, slots, up, load0, loadAvg(), srvUser/1000, srvSys/1000, (self1[0]-self0[0])/1000, (self1[1]-self0[1])/1000,
				rss/k/1024, pss/k/1024, anon/k/1024, slots, ps.ResetP50MS, ps.ResetP99MS, ps.ResetMaxMS, resetAll)
		}
		sort.Float64s(ups)
		sort.Float64s(resets)
		t.Logf("parallel %d: median of %d pool ups %.2fs (all %v); median reset p99 %.0f ms", n, runs, ups[len(ups)/2], ups, resets[len(resets)/2])
	}
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:3], " ")
}
