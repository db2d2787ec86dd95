package client_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/pristinedb/pristine/client"
)

// TestContentKeyVectors checks ContentKey against the vectors every
// client's tests share (testdata/contentkey/vectors.json), so that suites
// in different languages keyed by the same files share one template.
func TestContentKeyVectors(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "testdata", "contentkey", "vectors.json"))
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Cases []struct {
			Name     string            `json:"name"`
			Files    map[string]string `json:"files"`
			Patterns []string          `json:"patterns"`
			Extra    []string          `json:"extra"`
			Key      string            `json:"key"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Cases) == 0 {
		t.Fatal("no vectors")
	}
	for _, c := range v.Cases {
		t.Run(c.Name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, c.Files)
			pats := make([]string, len(c.Patterns))
			for i, p := range c.Patterns {
				pats[i] = filepath.Join(dir, p)
			}
			got, err := client.ContentKey(pats, c.Extra...)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.Key {
				t.Fatalf("key %s, want %s", got, c.Key)
			}
		})
	}
}
