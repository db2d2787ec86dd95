package oci

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/mariadb/mariadbtest"
	"github.com/pristinedb/pristine/internal/template"
	"github.com/pristinedb/pristine/internal/template/templatetest"
)

// TestCachedCaptureRekeyedIsPushedUnderItsKey: a capture whose source moves
// on between the plan's probe and the snapshot is filed under the key of
// the snapshot's position, and the fleet cache gets it under that key's
// tag, not under the probed key's (which would hand runners that probed the
// older position a template of a later one under its name).
func TestCachedCaptureRekeyedIsPushedUnderItsKey(t *testing.T) {
	mariadbtest.SkipOnMySQL(t, "the change marker is MariaDB's @@gtid_binlog_pos; MySQL sources have none yet (issue 21)")
	reg := startRegistry(t, registryOpts{})
	st := templatetest.NewBuilder(t, "auto")
	bin := mariadbtest.Binary(t)
	dir, err := mariadbtest.TempDir("/dev/shm", "pristine-oci-binlog-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	data := filepath.Join(dir, "data")
	ctx := context.Background()
	if err := bin.InitDatadir(ctx, data); err != nil {
		t.Fatal(err)
	}
	// The profile turns the binary log off; the options after it turn it on.
	src, err := mariadb.Start(bin, mariadb.Config{Datadir: data, RunDir: filepath.Join(dir, "run"), Profile: mariadb.DefaultProfile(),
		Extra: []string{"--log-bin=" + filepath.Join(dir, "run", "binlog"), "--server-id=9"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(src.Kill)
	if err := src.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	db := mariadbtest.Open(t, src, "")
	mariadbtest.Exec(t, db, "CREATE DATABASE g", "CREATE TABLE g.t (id INT PRIMARY KEY)", "INSERT INTO g.t VALUES (1)")
	var once sync.Once
	st.Progress = func(format string, args ...any) {
		if strings.HasPrefix(format, "capturing ") { // probed, not yet snapshotted
			once.Do(func() { mariadbtest.Exec(t, db, "INSERT INTO g.t VALUES (2)") })
		}
	}
	p, err := st.Plan(ctx, template.BuildOptions{Name: "g", Profile: mariadb.DefaultProfile(),
		Server: template.ServerSource{DSN: "mysql://root@localhost/?socket=" + src.Config.Socket(), Method: "logical"}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c := CacheOptions{Remote: reg.remote(), Repo: reg.Addr + "/fleet/rekey", Settle: 100 * time.Millisecond, Poll: 100 * time.Millisecond}
	m, o, err := CachedBuild(ctx, p, c)
	if err != nil || o != BuiltHere {
		t.Fatalf("cached capture: %v %s, want built here", err, o)
	}
	if m.Hash == p.Hash {
		t.Fatalf("the source moved on before the snapshot, yet the template kept the probed key %s", p.Hash[:12])
	}
	for hash, want := range map[string]bool{m.Hash: true, p.Hash: false} {
		e, err := c.Entry("g", hash)
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := e.Exists(ctx); err != nil || ok != want {
			t.Errorf("cache entry %s: exists=%v (err %v), want %v", e, ok, err, want)
		}
	}
}
