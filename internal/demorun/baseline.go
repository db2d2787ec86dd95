package demorun

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/pristinedb/pristine/internal/catalog"
	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/template"
)

// DumpLoadOnce times one copy of the template's database by
// `mariadb-dump | mariadb` into a new database of the same server.
func DumpLoadOnce(ctx context.Context, store *template.Builder, m *catalog.Meta) (time.Duration, error) {
	s, err := store.Start(ctx, m, "dumpload")
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
	return DumpLoadEnv(ctx, in, src, dst, nil)
}

// DumpLoadEnv is DumpLoad with the clients' environment (nil: inherited).
func DumpLoadEnv(ctx context.Context, in *mariadb.Instance, src, dst string, env []string) (time.Duration, error) {
	sock := in.Config.Socket()
	env = AdminEnv(env, in)
	start := time.Now()
	client, dumper := in.Binary.Client("mariadb"), in.Binary.Client("mariadb-dump")
	create := exec.CommandContext(ctx, client, "--no-defaults", "-uroot", "--socket="+sock, "-e", "CREATE DATABASE `"+dst+"`")
	create.Env = env
	if out, err := create.CombinedOutput(); err != nil {
		return 0, fmt.Errorf("create %s: %v: %s", dst, err, out)
	}
	dump := exec.CommandContext(ctx, dumper, "--no-defaults", "-uroot", "--socket="+sock,
		"--single-transaction", "--routines", "--triggers", "--events", src)
	load := exec.CommandContext(ctx, client, "--no-defaults", "-uroot", "--socket="+sock, dst)
	dump.Env, load.Env = env, env
	// An OS pipe, not io.Pipe: when either side is killed the other sees
	// EOF or EPIPE, and no copying goroutine is left blocked.
	pr, pw, err := os.Pipe()
	if err != nil {
		return 0, err
	}
	dump.Stdout, load.Stdin = pw, pr
	var dumpErr, loadErr []byte
	dump.Stderr, load.Stderr = (*sink)(&dumpErr), (*sink)(&loadErr)
	dump.WaitDelay, load.WaitDelay = 5*time.Second, 5*time.Second
	if err := load.Start(); err != nil {
		pr.Close()
		pw.Close()
		return 0, fmt.Errorf("start %s: %w (install the server's client package: mariadb-client, or mysql-client-core)", client, err)
	}
	pr.Close()
	err = dump.Run()
	pw.Close()
	if err != nil {
		load.Wait()
		return 0, fmt.Errorf("%s: %v: %s", dumper, err, dumpErr)
	}
	if err := load.Wait(); err != nil {
		return 0, fmt.Errorf("%s load: %v: %s", client, err, loadErr)
	}
	return time.Since(start), nil
}

// sink collects a child's stderr.
type sink []byte

func (s *sink) Write(p []byte) (int, error) { *s = append(*s, p...); return len(p), nil }

// AdminEnv adds the server's admin password to a client's environment
// (MYSQL_PWD, never argv); env nil means the inherited environment.
func AdminEnv(env []string, in *mariadb.Instance) []string {
	if in.Config.AdminPassword == "" {
		return env
	}
	if env == nil {
		env = os.Environ()
	}
	return append(env, "MYSQL_PWD="+in.Config.AdminPassword)
}
