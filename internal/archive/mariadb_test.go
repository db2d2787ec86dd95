package archive

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/pristinedb/pristine/internal/archive/throwaway"
)

// TestRealDatadirRoundTrip packs the data directory of a cleanly stopped
// mariadbd, unpacks it, and starts a server on the copy.
func TestRealDatadirRoundTrip(t *testing.T) {
	if why := throwaway.Available(); why != "" {
		t.Skip(why)
	}
	ctx := context.Background()
	base, err := os.MkdirTemp("/dev/shm", "pristine-archive-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	// The server's account passes through base to its files.
	if err := os.Chmod(base, 0o711); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(base, "data")
	srv, err := throwaway.Start(ctx, data, base)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Kill)
	if _, err := srv.Query(ctx, "CREATE DATABASE x; USE x; CREATE TABLE x.t (id INT PRIMARY KEY, v VARCHAR(100)); INSERT INTO x.t SELECT seq, MD5(seq) FROM seq_1_to_30000;"); err != nil {
		t.Fatal(err)
	}
	if err := srv.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := Pack(ctx, data, &buf, PackOptions{}); err != nil {
		t.Fatal(err)
	}
	cp := filepath.Join(base, "copy")
	if _, err := Unpack(ctx, &buf, cp, UnpackOptions{}); err != nil {
		t.Fatal(err)
	}
	sameTree(t, data, cp)
	run := filepath.Join(base, "run2")
	os.Mkdir(run, 0o755)
	srv2, err := throwaway.Start(ctx, cp, run)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv2.Kill)
	got, err := srv2.Query(ctx, "SELECT COUNT(*), SUM(id) FROM x.t")
	if err != nil {
		t.Fatal(err)
	}
	if got != "30000\t450015000" {
		t.Fatalf("copy answers %q", got)
	}
	srv2.Stop(ctx)
}
