package sqlload_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/pristinedb/pristine/internal/demo"
	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/mariadb/mariadbtest"
	"github.com/pristinedb/pristine/internal/sqlload"
)

// startBuildServer starts a throwaway server with the profile template builds
// use (a larger buffer pool than the test helper's).
func startBuildServer(b *testing.B) *mariadb.Instance {
	b.Helper()
	ctx := context.Background()
	bin, err := mariadb.FindBinary(ctx)
	if err != nil {
		b.Skipf("no database server to benchmark: %v", err)
	}
	dir, err := mariadbtest.TempDir("/dev/shm", "pristine-bench-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	data := filepath.Join(dir, "data")
	if err := bin.InitDatadir(ctx, data); err != nil {
		b.Fatal(err)
	}
	tmp := filepath.Join(dir, "tmp") // its own, so nobody else's cleanup of /tmp hits it
	if err := os.Mkdir(tmp, 0o700); err != nil {
		b.Fatal(err)
	}
	in, err := mariadb.Start(bin, mariadb.Config{Datadir: data, RunDir: filepath.Join(dir, "run"),
		Profile: mariadb.BuildProfile(mariadb.DefaultProfile()), Extra: []string{"--tmpdir=" + tmp}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(in.Kill)
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := in.WaitReady(ctx); err != nil {
		b.Fatal(err)
	}
	return in
}

// BenchmarkLoad times loading the demo schema from its generated SQL, and
// loading a mariadb-dump of it, with the loader and with the mariadb client.
func BenchmarkLoad(b *testing.B) { loadSuite(b, demo.Options{}, 1, 2, 4) }

// BenchmarkLoadManyTables times the pathological schema of 30,000 small
// tables, with the loader and with the mariadb client. Each run takes about
// 4 GB of /dev/shm and dropping such a database takes minutes, so each
// sub-benchmark starts its own server and every iteration loads into a new
// database: run it with -benchtime 1x.
func BenchmarkLoadManyTables(b *testing.B) {
	var gen bytes.Buffer
	demo.Write(&gen, demo.Options{Tables: 30000})
	b.Run("demo-sql/workers=4", func(b *testing.B) {
		in := startBuildServer(b)
		srcs := []sqlload.Source{sqlload.StringSource("demo.sql", gen.String())}
		n := 0
		for b.Loop() {
			n++
			if _, err := sqlload.Load(context.Background(), in.DSN(""), srcs, sqlload.Options{Database: fmt.Sprint("d", n)}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("demo-sql/mariadb-client", func(b *testing.B) {
		in := startBuildServer(b)
		db, err := in.Open("")
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		n := 0
		for b.Loop() {
			n++
			mustExec(b, db, fmt.Sprint("CREATE DATABASE d", n))
			cmd := exec.Command("mariadb", "--socket="+in.Config.Socket(), "--user=root", fmt.Sprint("d", n))
			cmd.Stdin = bytes.NewReader(gen.Bytes())
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("mariadb: %v: %s", err, out)
			}
		}
	})
}

func loadSuite(b *testing.B, opt demo.Options, workers ...int) {
	in := startBuildServer(b)
	db, err := in.Open("")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	var gen bytes.Buffer
	demo.Write(&gen, opt)
	srcs := []sqlload.Source{sqlload.StringSource("demo.sql", gen.String())}
	if _, err := sqlload.Load(context.Background(), in.DSN(""), srcs, sqlload.Options{Database: "src"}); err != nil {
		b.Fatal(err)
	}
	dumpPath := filepath.Join(b.TempDir(), "dump.sql")
	dump, err := exec.Command("mariadb-dump", "--socket="+in.Config.Socket(), "--user=root", "--single-transaction", "src").Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		b.Fatalf("mariadb-dump: %v: %s", err, ee.Stderr)
	} else if err != nil {
		b.Skipf("mariadb-dump: %v", err)
	}
	os.WriteFile(dumpPath, dump, 0o644)
	dumpSrcs, _ := sqlload.Sources(dumpPath, nil)
	b.Logf("generated SQL %d bytes, dump %d bytes", gen.Len(), len(dump))

	fresh := func(b *testing.B) {
		b.StopTimer()
		mustExec(b, db, "DROP DATABASE IF EXISTS d")
		quiesce(b, db)
		b.StartTimer()
	}
	loader := func(srcs []sqlload.Source, workers int) func(b *testing.B) {
		return func(b *testing.B) {
			for b.Loop() {
				fresh(b)
				if _, err := sqlload.Load(context.Background(), in.DSN(""), srcs, sqlload.Options{Database: "d", Workers: workers}); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	client := func(input []byte) func(b *testing.B) {
		return func(b *testing.B) {
			for b.Loop() {
				fresh(b)
				mustExec(b, db, "CREATE DATABASE d")
				cmd := exec.Command("mariadb", "--socket="+in.Config.Socket(), "--user=root", "d")
				cmd.Stdin = bytes.NewReader(input)
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("mariadb: %v: %s", err, out)
				}
			}
		}
	}
	for _, w := range workers {
		b.Run(fmt.Sprintf("demo-sql/workers=%d", w), loader(srcs, w))
	}
	b.Run("demo-sql/mariadb-client", client(gen.Bytes()))
	for _, w := range workers {
		b.Run(fmt.Sprintf("dump/workers=%d", w), loader(dumpSrcs, w))
	}
	b.Run("dump/mariadb-client", client(dump))
}

func mustExec(b *testing.B, db *sql.DB, q string) {
	b.Helper()
	if _, err := db.Exec(q); err != nil {
		b.Fatalf("%s: %v", q, err)
	}
}

// quiesce waits until the buffer pool has no dirty pages, so that flushing
// left over from the previous run does not slow the next one.
func quiesce(b *testing.B, db *sql.DB) {
	b.Helper()
	mustExec(b, db, "SET GLOBAL innodb_max_dirty_pages_pct = 0")
	defer mustExec(b, db, "SET GLOBAL innodb_max_dirty_pages_pct = DEFAULT")
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		var name string
		var dirty int64
		if err := db.QueryRow("SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_pages_dirty'").Scan(&name, &dirty); err != nil {
			b.Fatal(err)
		}
		if dirty == 0 {
			return
		}
	}
}
