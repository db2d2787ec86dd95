package bench

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"

	"github.com/pristinedb/pristine/internal/demorun"
	"github.com/pristinedb/pristine/internal/template"
)

// dumpLoader copies with `mariadb-dump | mariadb` into the same server,
// workers copies at a time.
type dumpLoader struct {
	workers int
	eat     bool
	srv     *template.Running
}

func (d *dumpLoader) row() Row {
	return Row{Method: MethodDumpLoad, Workers: d.workers, EatMyData: d.eat}
}

func (d *dumpLoader) setup(_ context.Context, srv *template.Running, _ string) error {
	d.srv = srv
	return nil
}

func (d *dumpLoader) copy(ctx context.Context, i int) error {
	_, err := demorun.DumpLoadEnv(ctx, d.srv.Inst, d.srv.Meta.Database(), "copy"+strconv.Itoa(i), eatEnv(d.eat))
	return err
}

// myLoader dumps once with mydumper and loads each copy with myloader,
// both with workers threads.
type myLoader struct {
	workers int
	eat     bool
	srv     *template.Running
	dir     string
}

func (l *myLoader) row() Row {
	return Row{Method: MethodMyLoader, Workers: l.workers, EatMyData: l.eat}
}

func (l *myLoader) setup(ctx context.Context, srv *template.Running, scratch string) error {
	l.srv, l.dir = srv, filepath.Join(scratch, "mydumper")
	cmd := exec.CommandContext(ctx, "mydumper", "--socket="+srv.Inst.Config.Socket(), "--user=root",
		"--database="+srv.Meta.Database(), "--outputdir="+l.dir, "--threads="+strconv.Itoa(l.workers),
		"--trx-consistency-only")
	cmd.Env = demorun.AdminEnv(eatEnv(l.eat), srv.Inst)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("mydumper: %v: %s (install it: apt-get install mydumper)", err, lastLine(out))
	}
	return nil
}

func (l *myLoader) copy(ctx context.Context, i int) error {
	cmd := exec.CommandContext(ctx, "myloader", "--socket="+l.srv.Inst.Config.Socket(), "--user=root",
		"--directory="+l.dir, "--source-db="+l.srv.Meta.Database(), "--database=copy"+strconv.Itoa(i),
		"--threads="+strconv.Itoa(l.workers))
	cmd.Env = demorun.AdminEnv(eatEnv(l.eat), l.srv.Inst)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("myloader: %v: %s", err, lastLine(out))
	}
	return nil
}

// lastLine is the last non-empty line of a command's output.
func lastLine(out []byte) string {
	s := string(out)
	for len(s) > 0 && (s[len(s)-1] == '\n' || s[len(s)-1] == ' ') {
		s = s[:len(s)-1]
	}
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '\n' {
			return s[i+1:]
		}
	}
	return s
}
