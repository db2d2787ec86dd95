// Package archivebench measures pristine's archive paths against mbstream
// and cat on one data directory, for the bench-archive command. Every
// measured step runs as child processes; CPU time is the user+sys rusage of
// those children.
package archivebench

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/quote"
	"github.com/pristinedb/pristine/internal/stats"
	"github.com/pristinedb/pristine/internal/xbstream"
)

// Options say what to measure.
type Options struct {
	Dir    string    // existing data directory; "" builds one with a throwaway mariadbd
	SizeMB int       // size of the generated data directory
	Runs   int       // repetitions of each step; the median is reported
	Exe    string    // the pristine binary
	Log    io.Writer // progress notes (nil: quiet)
	// Disk adds extraction onto real disks until durable (disk.go): ext4
	// under DiskDir (default /var/tmp) and an XFS image file there.
	Disk    bool
	DiskDir string
}

// Row is one measured step.
type Row struct {
	Name    string  `json:"name"`
	Wall    float64 `json:"wall_s"`
	CPU     float64 `json:"cpu_s"`
	GBps    float64 `json:"gb_per_s"`
	VsMbWal float64 `json:"speedup_vs_mbstream"`
	VsMbCPU float64 `json:"cpu_fraction_of_mbstream"`
}

// Report is the result of Run.
type Report struct {
	DataBytes   int64   `json:"data_bytes"`
	Files       int     `json:"files"`
	XbstreamBy  string  `json:"xbstream_made_by"`
	Runs        int     `json:"runs"`
	Rows        []Row   `json:"rows"`
	PipeRatio   float64 `json:"pack_unpack_pipe_vs_cat_cat"`
	ReflinkNote string  `json:"reflink_note,omitempty"`
	// DiskNotes say which disk steps were skipped and why; disk rows'
	// ratios are against mbstream -x + sync on the same filesystem.
	DiskNotes []string `json:"disk_notes,omitempty"`
}

type bench struct {
	opts Options
	work string
}

func (b *bench) logf(format string, args ...any) {
	if b.opts.Log != nil {
		fmt.Fprintf(b.opts.Log, format+"\n", args...)
	}
}

// Run builds or takes the data directory, prepares the archives and
// measures every step. Everything it creates lives in one directory under
// /dev/shm, removed at the end.
func Run(ctx context.Context, opts Options) (*Report, error) {
	if opts.Runs <= 0 {
		opts.Runs = 3
	}
	if opts.SizeMB <= 0 {
		opts.SizeMB = 1024
	}
	work, err := os.MkdirTemp("/dev/shm", "pristine-bench-")
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	// The throwaway server's account passes through it to its files.
	if err := os.Chmod(work, 0o711); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	defer os.RemoveAll(work)
	b := &bench{opts: opts, work: work}
	rep := &Report{Runs: opts.Runs}

	data := opts.Dir
	xbs := filepath.Join(work, "data.xbs")
	if data == "" {
		data = filepath.Join(work, "data")
		if rep.XbstreamBy, err = b.generate(ctx, data, xbs); err != nil {
			return nil, err
		}
	} else {
		rep.XbstreamBy = "pristine's xbstream writer (10 MiB chunks, as mariadb-backup)"
		if err := writeXbstream(data, xbs); err != nil {
			return nil, err
		}
	}
	rep.DataBytes, rep.Files = dirSize(data)
	prsa := filepath.Join(work, "data.prsa")
	if _, err := b.shell(ctx, fmt.Sprintf("%s pack %s > %s", quote.Shell(opts.Exe), quote.Shell(data), quote.Shell(prsa))); err != nil {
		return nil, err
	}
	out := filepath.Join(work, "out")
	// A stream from pristine's writer is not a backup: it has no
	// xtrabackup_checkpoints, which unpack requires by default.
	anyXbs := ""
	if !strings.HasPrefix(rep.XbstreamBy, "mariadb-backup") {
		anyXbs = " --any-xbstream"
	}
	steps := []struct{ name, cmd string }{
		{"mbstream -x (xbstream, tmpfs->tmpfs)", fmt.Sprintf("mkdir %s && mbstream -x -C %s < %s", quote.Shell(out), quote.Shell(out), quote.Shell(xbs))},
		{"pristine unpack --format xbstream", fmt.Sprintf("%s unpack --format xbstream%s %s %s", quote.Shell(opts.Exe), anyXbs, quote.Shell(xbs), quote.Shell(out))},
		{"pristine unpack (archive file)", fmt.Sprintf("%s unpack %s %s", quote.Shell(opts.Exe), quote.Shell(prsa), quote.Shell(out))},
		{"pristine unpack --no-copy-range", fmt.Sprintf("%s unpack --no-copy-range %s %s", quote.Shell(opts.Exe), quote.Shell(prsa), quote.Shell(out))},
		{"pristine unpack - < archive (stream)", fmt.Sprintf("%s unpack - %s < %s", quote.Shell(opts.Exe), quote.Shell(out), quote.Shell(prsa))},
		{"pristine pack DIR | pristine unpack -", fmt.Sprintf("%s pack %s | %s unpack - %s", quote.Shell(opts.Exe), quote.Shell(data), quote.Shell(opts.Exe), quote.Shell(out))},
		{"cat ARCHIVE | cat > /dev/null", fmt.Sprintf("cat %s | cat > /dev/null", quote.Shell(prsa))},
		// How xbstream is used: through a pipe, as from mariadb-backup.
		{"cat XBSTREAM | mbstream -x", fmt.Sprintf("mkdir %s && cat %s | mbstream -x -C %s", quote.Shell(out), quote.Shell(xbs), quote.Shell(out))},
		{"cat XBSTREAM | pristine unpack --format xbstream -", fmt.Sprintf("cat %s | %s unpack --format xbstream%s - %s", quote.Shell(xbs), quote.Shell(opts.Exe), anyXbs, quote.Shell(out))},
	}
	for _, s := range steps {
		b.logf("measuring: %s", s.name)
		r, err := b.measure(ctx, s.name, s.cmd, out)
		if err != nil {
			return nil, err
		}
		rep.Rows = append(rep.Rows, r)
	}
	if r, note, err := b.reflink(ctx, prsa); err != nil {
		rep.ReflinkNote = err.Error()
	} else {
		rep.Rows = append(rep.Rows, r...)
		rep.ReflinkNote = note
	}
	mb := rep.Rows[0]
	var pipe, cat Row
	for i := range rep.Rows {
		r := &rep.Rows[i]
		r.GBps = float64(rep.DataBytes) / 1e9 / r.Wall
		r.VsMbWal = mb.Wall / r.Wall
		if mb.CPU > 0 {
			r.VsMbCPU = r.CPU / mb.CPU
		}
		switch r.Name {
		case steps[5].name:
			pipe = *r
		case steps[6].name:
			cat = *r
		}
	}
	rep.PipeRatio = cat.Wall / pipe.Wall
	if opts.Disk {
		rows, notes := b.disk(ctx, xbs, prsa, rep.DataBytes)
		rep.Rows = append(rep.Rows, rows...)
		rep.DiskNotes = notes
	}
	return rep, nil
}

// measure runs cmd opts.Runs times after one warm-up run (which also
// faults in the memory the step needs) and returns the median.
func (b *bench) measure(ctx context.Context, name, cmd, out string) (Row, error) {
	var walls, cpus []float64
	for i := 0; i <= b.opts.Runs; i++ {
		os.RemoveAll(out)
		w, c, err := b.timed(ctx, cmd)
		if err != nil {
			return Row{}, fmt.Errorf("bench %s: %w", name, err)
		}
		if i > 0 {
			walls, cpus = append(walls, w), append(cpus, c)
		}
	}
	os.RemoveAll(out)
	return Row{Name: name, Wall: stats.Median(walls), CPU: stats.Median(cpus)}, nil
}

// timed runs one shell command line and returns wall seconds and the
// user+sys seconds of every process it started.
func (b *bench) timed(ctx context.Context, cmdline string) (float64, float64, error) {
	c := exec.CommandContext(ctx, "/bin/sh", "-c", cmdline)
	var errb strings.Builder
	c.Stderr = &errb
	start := time.Now()
	if err := c.Run(); err != nil {
		return 0, 0, fmt.Errorf("%s: %w: %s", cmdline, err, errb.String())
	}
	wall := time.Since(start).Seconds()
	ru := c.ProcessState.SysUsage().(*syscall.Rusage)
	// sh waits for its children, so its rusage includes theirs.
	cpu := float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
	return wall, cpu, nil
}

func (b *bench) shell(ctx context.Context, cmdline string) (string, error) {
	out, err := exec.CommandContext(ctx, "/bin/sh", "-c", cmdline).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("bench: %s: %w: %s", cmdline, err, out)
	}
	return string(out), nil
}

// generate builds a data directory of about SizeMB with a throwaway server
// (started through internal/mariadb, as every server pristine starts) and
// streams it with mariadb-backup while the server runs.
func (b *bench) generate(ctx context.Context, data, xbs string) (string, error) {
	bin, err := mariadb.FindBinary(ctx)
	if err != nil {
		return "", fmt.Errorf("bench: cannot build a data directory: %w; pass --dir", err)
	}
	b.logf("starting a throwaway mariadbd in %s", data)
	if err := bin.InitDatadir(ctx, data); err != nil {
		return "", fmt.Errorf("bench: %w", err)
	}
	// A template build's profile, with the server's own redo log size
	// (96 MiB), the data directories this bench has always measured.
	p := mariadb.BuildProfile(mariadb.DefaultProfile())
	p.LogFileSize = 96 << 20
	srv, err := mariadb.Start(bin, mariadb.Config{Datadir: data, RunDir: filepath.Join(b.work, "run"), Profile: p})
	if err != nil {
		return "", fmt.Errorf("bench: %w", err)
	}
	defer srv.Kill()
	wait, cancel := context.WithTimeout(ctx, time.Minute)
	err = srv.WaitReady(wait)
	cancel()
	if err != nil {
		return "", fmt.Errorf("bench: %w", err)
	}
	// About 380 bytes per row on disk with these columns and one index.
	rows := max(1, (b.opts.SizeMB-110)) * 1000000 / 380
	tables := max(1, rows/400000)
	per := rows / tables
	sql := []string{"CREATE DATABASE bench"}
	for i := range tables {
		sql = append(sql, fmt.Sprintf("CREATE TABLE bench.t%d (id INT PRIMARY KEY, a BIGINT, b VARCHAR(200), c CHAR(100), KEY(a))", i),
			fmt.Sprintf("INSERT INTO bench.t%d SELECT seq, seq*7, REPEAT(MD5(seq+%d), 5), MD5(seq*3) FROM bench.seq_1_to_%d", i, i, per))
	}
	b.logf("generating %d tables of %d rows", tables, per)
	if err := execAll(ctx, srv, sql); err != nil {
		return "", fmt.Errorf("bench: generate data: %w", err)
	}
	how := "mariadb-backup --backup --stream=xbstream against the throwaway server"
	cmd := fmt.Sprintf("mariadb-backup --backup --stream=xbstream --socket=%s --user=root --datadir=%s --target-dir=%s > %s 2>%s",
		quote.Shell(srv.Config.Socket()), quote.Shell(data), quote.Shell(filepath.Join(b.work, "bk")), quote.Shell(xbs), quote.Shell(filepath.Join(b.work, "backup.log")))
	if _, err := exec.LookPath("mariadb-backup"); err != nil {
		how = ""
	} else if _, err := b.shell(ctx, cmd); err != nil {
		b.logf("mariadb-backup failed (%v); using pristine's xbstream writer", err)
		how = ""
	}
	if err := srv.Stop(ctx, time.Minute); err != nil {
		return "", fmt.Errorf("bench: %w", err)
	}
	if how == "" {
		how = "pristine's xbstream writer (10 MiB chunks, as mariadb-backup)"
		if err := writeXbstream(data, xbs); err != nil {
			return "", err
		}
	}
	return how, nil
}

// execAll runs each statement on srv as root, in order.
func execAll(ctx context.Context, srv *mariadb.Instance, stmts []string) error {
	db, err := srv.Open("")
	if err != nil {
		return err
	}
	defer db.Close()
	for _, s := range stmts {
		if _, err := db.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", abbrev(s), err)
		}
	}
	return nil
}

// abbrev shortens a statement for an error message.
func abbrev(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

func writeXbstream(dir, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	defer f.Close()
	if err := xbstream.NewWriter(f).WriteDir(dir); err != nil {
		return fmt.Errorf("bench: write xbstream: %w", err)
	}
	return f.Close()
}

func dirSize(dir string) (int64, int) {
	var n int64
	files := 0
	filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			n += fi.Size()
			files++
		}
		return nil
	})
	return n, files
}
