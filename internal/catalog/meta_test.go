package catalog_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pristinedb/pristine/internal/catalog"
	"github.com/pristinedb/pristine/internal/template"
	"github.com/pristinedb/pristine/internal/template/templatetest"
)

const schema = `CREATE TABLE parent (id INT PRIMARY KEY, name VARCHAR(20)) ENGINE=InnoDB;
CREATE TABLE child (id INT PRIMARY KEY, parent_id INT, KEY (parent_id),
  FOREIGN KEY (parent_id) REFERENCES parent (id)) ENGINE=InnoDB;
INSERT INTO child VALUES (1, 1), (2, 2);
INSERT INTO parent VALUES (1, 'a'), (2, 'b');
`

func writeFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestBadMetaOnDiskIsSkipped plants template directories whose meta.json
// is not valid: List, Get, Remove and GC skip them (with one warning
// naming the directory) instead of panicking.
func TestBadMetaOnDiskIsSkipped(t *testing.T) {
	st := templatetest.NewBuilder(t, "auto")
	var logs bytes.Buffer
	st.Catalog().Log = slog.New(slog.NewTextHandler(&logs, nil))
	m := templatetest.Build(t, st, "app", schema, template.BuildOptions{})
	raw, err := os.ReadFile(filepath.Join(st.Catalog().Dir(m.Hash), "meta.json"))
	if err != nil {
		t.Fatal(err)
	}
	plant := func(dir string, edit func(*catalog.Meta)) string {
		var mm catalog.Meta
		json.Unmarshal(raw, &mm)
		mm.Name = "evil"
		edit(&mm)
		b, _ := json.Marshal(&mm)
		p := filepath.Join(st.Catalog().Root().Data(), "templates", dir)
		os.MkdirAll(filepath.Join(p, "data"), 0o755)
		if err := os.WriteFile(filepath.Join(p, "meta.json"), b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	other := strings.Repeat("ab", 32)
	bad := []string{
		plant("x", func(mm *catalog.Meta) { mm.Hash = "x" }),
		plant(other, func(mm *catalog.Meta) { mm.Hash = m.Hash }), // names another directory's hash
		plant(strings.Repeat("cd", 32), func(mm *catalog.Meta) { mm.Databases = nil }),
	}
	junk := filepath.Join(st.Catalog().Root().Data(), "templates", "junk-meta")
	os.Mkdir(junk, 0o755)
	if err := os.WriteFile(filepath.Join(junk, "meta.json"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	bad = append(bad, junk)
	for range 3 {
		all, err := st.Catalog().List()
		if err != nil || len(all) != 1 || all[0].Hash != m.Hash {
			t.Fatalf("List = %v, %v: want only the good template", all, err)
		}
	}
	for _, dir := range bad {
		if n := strings.Count(logs.String(), "dir="+dir+" "); n != 1 {
			t.Errorf("%d warnings name %s, want 1:\n%s", n, dir, logs.String())
		}
	}
	if _, err := st.Catalog().Get("evil"); !errors.Is(err, catalog.ErrNotFound) {
		t.Fatalf("Get(evil) = %v, want ErrNotFound", err)
	}
	if _, err := st.Catalog().GC(0, nil); err != nil {
		t.Fatal(err)
	}
	for _, dir := range bad {
		if _, err := os.Stat(dir); err != nil {
			t.Errorf("GC touched %s, which is not a template: %v", dir, err)
		}
	}
	if _, err := st.Catalog().Get("app"); !errors.Is(err, catalog.ErrNotFound) {
		t.Fatalf("GC(0) kept app: %v", err)
	}
}
