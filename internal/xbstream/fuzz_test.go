package xbstream

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
)

// FuzzExtract feeds arbitrary bytes to Extract: it must never panic, and
// must either fail leaving no target or produce the target.
func FuzzExtract(f *testing.F) {
	var whole bytes.Buffer
	w := NewWriter(&whole)
	w.Chunk = 7
	w.WriteFile("d/a", []byte("some bytes of a"))
	w.Sparse("s", 0, []uint32{1, 2, 3, 1}, []byte("xyz"))
	w.EOF("s")
	w.WriteFile("xtrabackup_checkpoints", []byte("backup_type = full-backuped\n"))
	w.WriteFile("xtrabackup_info", []byte("tool_name = mariabackup\n"))
	f.Add(whole.Bytes(), false)
	f.Add(whole.Bytes(), true)
	f.Add(whole.Bytes()[:len(whole.Bytes())/2], false)
	var open bytes.Buffer
	NewWriter(&open).Payload("left/open", 0, []byte("no end chunk"))
	f.Add(open.Bytes(), false)
	f.Fuzz(func(t *testing.T, data []byte, backup bool) {
		out := filepath.Join(t.TempDir(), "o")
		_, err := Extract(context.Background(), bytes.NewReader(data), out, Options{Threads: 2, Backup: backup})
		_, serr := os.Stat(out)
		if err != nil && serr == nil {
			t.Fatalf("failed (%v) but left the target", err)
		}
		if err == nil && serr != nil {
			t.Fatalf("succeeded without a target: %v", serr)
		}
	})
}
