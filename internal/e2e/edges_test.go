package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pristinedb/pristine/internal/xbstream"
)

// TestUnpackRefusesCutXbstream: `pristine unpack --format xbstream` fails on
// a stream that is cut short, naming what is missing, and leaves no target.
func TestUnpackRefusesCutXbstream(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, f func(w *xbstream.Writer)) string {
		var b bytes.Buffer
		f(xbstream.NewWriter(&b))
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	open := write("open.xbs", func(w *xbstream.Writer) {
		w.WriteFile("ibdata1", []byte("whole"))
		w.Payload("db/t.ibd", 0, []byte("no end chunk follows"))
	})
	noEnd := write("noend.xbs", func(w *xbstream.Writer) {
		w.WriteFile("ibdata1", []byte("whole"))
		w.WriteFile("db/t.ibd", []byte("whole too"))
	})
	whole := write("whole.xbs", func(w *xbstream.Writer) {
		w.WriteFile("ibdata1", []byte("whole"))
		w.WriteFile("xtrabackup_checkpoints", []byte("backup_type = full-backuped\n"))
		w.WriteFile("xtrabackup_info", []byte("tool_name = mariabackup\n"))
	})
	tests := []struct {
		name, stream string
		args         []string
		want         string // in stderr; empty: success
	}{
		{"file left open", open, nil, "1 of 2 files have no end-of-file chunk (db/t.ibd)"},
		{"file left open, any stream", open, []string{"--any-xbstream"}, "db/t.ibd"},
		{"backup never finished", noEnd, nil, "--any-xbstream"},
		{"not a backup, said so", noEnd, []string{"--any-xbstream"}, ""},
		{"whole backup", whole, nil, ""},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, "out-"+string(rune('a'+i)))
			args := append([]string{"unpack", "--format", "xbstream"}, tc.args...)
			_, errOut, err := runBin(nil, append(args, tc.stream, out)...)
			_, serr := os.Stat(out)
			if tc.want == "" {
				if err != nil || serr != nil {
					t.Fatalf("unpack failed: %v %s", err, errOut)
				}
				return
			}
			if err == nil || !strings.Contains(errOut, tc.want) {
				t.Fatalf("want a failure saying %q, got %v: %s", tc.want, err, errOut)
			}
			if serr == nil {
				t.Fatal("the target exists after a failed unpack")
			}
		})
	}
}

// runBin runs pristine with args and extra environment, without a root.
func runBin(env []string, args ...string) (string, string, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), err
}

// TestBadMetaOnDisk: a template directory with a meta.json pristine could
// not have written (hash "x") makes no command panic: ls warns naming it,
// pool up and rm of the good template work. On the way, a lease with a TTL
// out of range is refused with the range.
func TestBadMetaOnDisk(t *testing.T) {
	e := newEnv(t)
	in := filepath.Join(t.TempDir(), "s.sql")
	os.WriteFile(in, []byte(schema), 0o644)
	e.must("template", "build", "app", "--from-sql", in)
	bad := filepath.Join(e.root, "data", "templates", "x")
	os.MkdirAll(filepath.Join(bad, "data"), 0o755)
	meta := `{"name":"evil","hash":"x","server":"any","databases":["app"],"user":"pristine","password":"p"}`
	if err := os.WriteFile(filepath.Join(bad, "meta.json"), []byte(meta), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := e.run("template", "ls")
	if err != nil || !strings.Contains(out, "app") || strings.Contains(out, "evil") || !strings.Contains(errOut, bad) {
		t.Fatalf("template ls: %v\nstdout: %s\nstderr: %s", err, out, errOut)
	}
	if _, errOut, err := e.run("template", "rm", "evil"); err == nil || strings.Contains(errOut, "panic") {
		t.Fatalf("template rm evil: %v %s", err, errOut)
	}
	e.must("pool", "up", "--template", "app", "--size", "1")
	// The CLI shows the daemon's 400 with the allowed range.
	if _, errOut, err := e.run("lease", "--ttl", "200h"); err == nil || !strings.Contains(errOut, "ttl_seconds is 720000: it must be from 0 to 604800 seconds (7 days)") {
		t.Fatalf("lease --ttl 200h: %v %s", err, errOut)
	}
	e.lease()
	e.must("pool", "down")
	e.must("template", "rm", "app")
	if _, err := os.Stat(bad); err != nil {
		t.Fatalf("the bad directory was touched: %v", err)
	}
}
