package docs

import (
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/pristinedb/pristine/internal/mariadb"
)

// TestTemplateOptionsTable keeps the allow-list table of security.md ("A
// template is data") true to mariadb.TemplateOptions: the same options,
// each with the reason the code gives.
func TestTemplateOptionsTable(t *testing.T) {
	b, err := os.ReadFile("security.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "| option | why it is allowed |\n|---|---|\n")
	if !ok {
		t.Fatal("security.md has no table headed | option | why it is allowed |")
	}
	table, _, _ = strings.Cut(table, "\n\n")
	var documented []string
	for _, row := range strings.Split(table, "\n") {
		cells := strings.Split(strings.Trim(row, "| "), " | ")
		if len(cells) != 2 {
			t.Fatalf("row %q: want two cells", row)
		}
		name := strings.Trim(cells[0], "`")
		documented = append(documented, name)
		why, ok := mariadb.TemplateOptions[name]
		if !ok {
			t.Errorf("security.md allows %s, which mariadb.TemplateOptions does not", name)
			continue
		}
		if strings.ReplaceAll(cells[1], "`", "") != why {
			t.Errorf("security.md says %s is allowed for %q, the code %q", name, cells[1], why)
		}
	}
	sort.Strings(documented)
	if got, want := strings.Join(documented, " "), strings.Join(mariadb.AllowedTemplateOptions(), " "); got != want {
		t.Errorf("security.md's allow-list:\n%s\nmariadb.TemplateOptions:\n%s", got, want)
	}
}
