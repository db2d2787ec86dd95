package client_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/pristinedb/pristine/client"
)

// TestContentKeyVectors checks the shared vectors of
// testdata/contentkey/vectors.json, which the other languages' clients
// (Python, PHP, Java, Ruby and Node) check too: a key that differs
// between languages would give two templates for the same files.
func TestContentKeyVectors(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "testdata", "contentkey", "vectors.json"))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Vectors []struct {
			Name     string            `json:"name"`
			Files    map[string]string `json:"files"`
			Patterns []string          `json:"patterns"`
			Extra    []string          `json:"extra"`
			Key      string            `json:"key"`
		} `json:"vectors"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	if len(f.Vectors) == 0 {
		t.Fatal("no vectors")
	}
	for _, v := range f.Vectors {
		t.Run(v.Name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, v.Files)
			pats := make([]string, len(v.Patterns))
			for i, p := range v.Patterns {
				pats[i] = filepath.Join(dir, p)
			}
			got, err := client.ContentKey(pats, v.Extra...)
			if err != nil {
				t.Fatal(err)
			}
			if got != v.Key {
				t.Fatalf("key %s, want %s", got, v.Key)
			}
		})
	}
}
