package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/template"
)

func profileFor(*template.Store) mariadb.Profile { return mariadb.DefaultProfile() }

// Scratch is a server started on a clone of a template, for baselines that
// copy inside one server.
type Scratch struct {
	Inst *mariadb.Instance
	dir  string
	rm   func() error
}

// StartScratch clones the template under the root and starts a server on it
// with the template build profile.
func StartScratch(ctx context.Context, store *template.Store, m *template.Meta, name string) (*Scratch, error) {
	b, err := store.BackendFor(m)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(store.Root.Data(), "bench", name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	_ = b.Remove(data)
	if err := b.Clone(store.DataDir(m.Hash), data); err != nil {
		return nil, err
	}
	p := mariadb.BuildProfile(mariadb.DefaultProfile())
	p.LogFileSize = m.LogFileSize
	in, err := mariadb.Start(store.Bin, mariadb.Config{Datadir: data, RunDir: filepath.Join(store.Root.Path, "run", "bench-"+name), Profile: p})
	s := &Scratch{Inst: in, dir: dir, rm: func() error { return b.Remove(data) }}
	if err == nil {
		err = in.WaitReady(ctx)
	}
	if err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Close kills the server and removes its clone.
func (s *Scratch) Close() error {
	if s.Inst != nil {
		s.Inst.Kill()
		os.RemoveAll(s.Inst.Config.RunDir)
	}
	err := s.rm()
	os.RemoveAll(s.dir)
	return err
}

// DumpLoadOnce times one copy of the template's database by
// `mariadb-dump | mariadb` into a new database of the same server.
func DumpLoadOnce(ctx context.Context, store *template.Store, m *template.Meta) (time.Duration, error) {
	s, err := StartScratch(ctx, store, m, "dumpload")
	if err != nil {
		return 0, err
	}
	defer s.Close()
	return DumpLoad(ctx, s.Inst, m.Database(), m.Database()+"_copy1")
}

// DumpLoad copies database src to dst on one server with
// `mariadb-dump --single-transaction --routines --triggers --events src |
// mariadb dst`, the way most projects copy a test database today.
func DumpLoad(ctx context.Context, in *mariadb.Instance, src, dst string) (time.Duration, error) {
	sock := in.Config.Socket()
	start := time.Now()
	create := exec.CommandContext(ctx, "mariadb", "--no-defaults", "-uroot", "--socket="+sock, "-e", "CREATE DATABASE `"+dst+"`")
	if out, err := create.CombinedOutput(); err != nil {
		return 0, fmt.Errorf("create %s: %v: %s", dst, err, out)
	}
	dump := exec.CommandContext(ctx, "mariadb-dump", "--no-defaults", "-uroot", "--socket="+sock,
		"--single-transaction", "--routines", "--triggers", "--events", src)
	load := exec.CommandContext(ctx, "mariadb", "--no-defaults", "-uroot", "--socket="+sock, dst)
	pr, pw := io.Pipe()
	dump.Stdout, load.Stdin = pw, pr
	var dumpErr, loadErr []byte
	dump.Stderr, load.Stderr = (*sink)(&dumpErr), (*sink)(&loadErr)
	if err := load.Start(); err != nil {
		return 0, fmt.Errorf("start mariadb client: %w (install mariadb-client)", err)
	}
	if err := dump.Run(); err != nil {
		pw.Close()
		load.Wait()
		return 0, fmt.Errorf("mariadb-dump: %v: %s", err, dumpErr)
	}
	pw.Close()
	if err := load.Wait(); err != nil {
		return 0, fmt.Errorf("mariadb load: %v: %s", err, loadErr)
	}
	return time.Since(start), nil
}

// sink collects a child's stderr.
type sink []byte

func (s *sink) Write(p []byte) (int, error) { *s = append(*s, p...); return len(p), nil }
