package archive

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pristinedb/pristine/internal/mariadb/mariadbtest"
)

// TestRealDatadirRoundTrip packs the data directory of a cleanly stopped
// mariadbd, unpacks it, and starts a server on the copy.
func TestRealDatadirRoundTrip(t *testing.T) {
	ctx := context.Background()
	srv := mariadbtest.Start(t)
	db := mariadbtest.Open(t, srv, "")
	mariadbtest.Exec(t, db, "CREATE DATABASE x", "CREATE TABLE x.t (id INT PRIMARY KEY, v VARCHAR(100))",
		"INSERT INTO x.t SELECT seq, MD5(seq) FROM x.seq_1_to_30000")
	db.Close()
	if err := srv.Stop(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	data := srv.Config.Datadir
	var buf bytes.Buffer
	if _, err := Pack(ctx, data, &buf, PackOptions{}); err != nil {
		t.Fatal(err)
	}
	base, err := mariadbtest.TempDir("/dev/shm", "pristine-archive-test-")
	if err != nil {
		base = mariadbtest.TestDir(t)
	} else {
		t.Cleanup(func() { os.RemoveAll(base) })
	}
	cp := filepath.Join(base, "copy")
	if _, err := Unpack(ctx, &buf, cp, UnpackOptions{}); err != nil {
		t.Fatal(err)
	}
	sameTree(t, data, cp)
	srv2 := mariadbtest.StartOn(t, cp)
	var n, sum int64
	if err := mariadbtest.Open(t, srv2, "").QueryRowContext(ctx, "SELECT COUNT(*), SUM(id) FROM x.t").Scan(&n, &sum); err != nil {
		t.Fatal(err)
	}
	if n != 30000 || sum != 450015000 {
		t.Fatalf("copy answers %d rows summing to %d, want 30000 and 450015000", n, sum)
	}
	if err := srv2.Stop(ctx, time.Minute); err != nil {
		t.Error(err)
	}
}
