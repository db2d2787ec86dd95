package e2e

import (
	"database/sql"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The daemon is killed (SIGKILL) in the middle of an in-place reset: one
// changed table restored, the other not yet. The restarted daemon never
// hands the slot out half-restored: its lease was gone from the journal
// before the reset began, so the slot is cloned afresh, and the next
// holder sees the template in both tables.
func TestDaemonKilledDuringInPlaceReset(t *testing.T) {
	e := newEnv(t)
	e.scratch("btrfs", "1G")
	paused := filepath.Join(t.TempDir(), "paused")
	t.Setenv("PRISTINE_TEST_INPLACE_PAUSE", paused)
	in := filepath.Join(t.TempDir(), "s.sql")
	os.WriteFile(in, []byte(schema+"CREATE TABLE other (id INT PRIMARY KEY, v VARCHAR(20));\nINSERT INTO other VALUES (1, 'pristine');\n"), 0o644)
	e.must("template", "build", "app", "--from-sql", in)
	e.must("pool", "up", "--template", "app", "--size", "1")
	l := e.lease()
	db, err := sql.Open("mysql", l.DSN)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"UPDATE canary SET v='dirty'", "UPDATE other SET v='dirty'"} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	e.must("release", l.ID)
	for i := 0; i < 3000; i++ {
		if _, err := os.Stat(paused); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := os.Stat(paused); err != nil {
		t.Fatal("the in-place reset never reached its middle")
	}
	os.Unsetenv("PRISTINE_TEST_INPLACE_PAUSE")
	e.killDaemon()

	next := e.lease()
	for _, table := range []string{"canary", "other"} {
		if v, err := query(t, next.DSN, "SELECT v FROM "+table+" WHERE id = 1"); err != nil || v != "pristine" {
			t.Errorf("after a daemon killed during an in-place reset, %s holds %q (%v), want the template's 'pristine'", table, v, err)
		}
	}
}
