package template_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pristinedb/pristine/internal/archive"
	"github.com/pristinedb/pristine/internal/catalog"
	"github.com/pristinedb/pristine/internal/template"
	"github.com/pristinedb/pristine/internal/template/templatetest"
)

// craft copies template m's directory, lets edit change its meta.json (as
// a map, so any field can take any JSON value) and packs it.
func craft(t *testing.T, st *template.Builder, m *catalog.Meta, edit func(map[string]any)) []byte {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "t")
	if out, err := exec.Command("cp", "-a", st.Catalog().Dir(m.Hash), dir).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "meta.json"))
	if err != nil {
		t.Fatal(err)
	}
	var mm map[string]any
	if err := json.Unmarshal(raw, &mm); err != nil {
		t.Fatal(err)
	}
	edit(mm)
	raw, _ = json.Marshal(mm)
	if err := os.WriteFile(filepath.Join(dir, "meta.json"), raw, 0o600); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if _, err := archive.Pack(context.Background(), dir, &b, archive.PackOptions{}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestImportValidatesMeta imports crafted archives: a meta.json whose hash,
// name, databases or account could not come from pristine is refused with
// a clear error, and nothing (no hidden or odd directory) is published.
func TestImportValidatesMeta(t *testing.T) {
	src := templatetest.NewBuilder(t, "auto")
	m := templatetest.Build(t, src, "app", schema, template.BuildOptions{})
	dst := templatetest.NewBuilder(t, "auto")
	set := func(k string, v any) func(map[string]any) { return func(mm map[string]any) { mm[k] = v } }
	// The flavour that is not the installed one.
	other := "mysql"
	if m.Flavor == "mysql" {
		other = "mariadb"
	}
	tests := []struct {
		name string
		edit func(map[string]any)
		want string
	}{
		{"hash x", set("hash", "x"), `hash "x" is not a template hash`},
		{"hash dot dot", set("hash", "../../../tmp/evil"), "is not a template hash"},
		{"hash hidden", set("hash", ".import-zzz"), "is not a template hash"},
		{"hash empty", set("hash", ""), "is not a template hash"},
		{"hash upper case", set("hash", strings.ToUpper(m.Hash)), "is not a template hash"},
		{"hash too long", set("hash", m.Hash+"0"), "is not a template hash"},
		{"hash not a string", set("hash", 7), "meta.json"},
		{"name", set("name", "../x"), "template name"},
		{"no databases", set("databases", []string{}), "no databases"},
		{"database missing from data", set("databases", []string{"nope"}), "has no nope/"},
		{"database with backtick", set("databases", []string{"a`b"}), "database"},
		{"database dot dot", set("databases", []string{".."}), "database"},
		{"database mysql", set("databases", []string{"mysql"}), "system schema"},
		{"account", set("user", "root'@'%"), "account"},
		{"password with quote", set("password", "x' OR '1"), "password"},
		{"flavor", set("flavor", other), other + " server"},
		{"server", set("server", "9.9.9-Other"), "9.9.9-Other"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			raw := craft(t, src, m, tc.edit)
			_, _, err := dst.Import(context.Background(), bytes.NewReader(raw), archive.UnpackOptions{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want an error saying %q, got %v", tc.want, err)
			}
			ents, _ := os.ReadDir(filepath.Join(dst.Catalog().Root().Data(), "templates"))
			for _, e := range ents {
				if e.IsDir() {
					t.Fatalf("a refused import left directory %s", e.Name())
				}
			}
			if all, err := dst.Catalog().List(); err != nil || len(all) != 0 {
				t.Fatalf("List after a refused import: %v %v", all, err)
			}
		})
	}
	// A good archive imports, and the redo log size is taken from the data.
	raw := craft(t, src, m, set("log_file_size", 1))
	got, imported, err := dst.Import(context.Background(), bytes.NewReader(raw), archive.UnpackOptions{})
	if err != nil || !imported {
		t.Fatalf("import of a good archive: %v", err)
	}
	// MariaDB's redo log is ib_logfile0; MySQL's the files of #innodb_redo.
	data := dst.Catalog().DataDir(got.Hash)
	var size int64
	st, err := os.Stat(filepath.Join(data, "ib_logfile0"))
	if err == nil {
		size = st.Size()
	} else {
		ents, rerr := os.ReadDir(filepath.Join(data, "#innodb_redo"))
		for _, e := range ents {
			if fi, ierr := e.Info(); ierr == nil {
				size += fi.Size()
			}
		}
		if rerr == nil {
			err = nil
		}
	}
	if err != nil || got.LogFileSize != size || got.LogFileSize == 1 {
		t.Fatalf("log_file_size %d, redo log %d bytes, %v", got.LogFileSize, size, err)
	}
}
