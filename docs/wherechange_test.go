package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestWhereDoesMyChangeGo reads the "Where does my change go" table of
// architecture.md and fails for each file or directory it names that does
// not exist: a file that moved must take its row along. It wants at least
// ten rows.
func TestWhereDoesMyChangeGo(t *testing.T) {
	b, err := os.ReadFile("architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(b), "## Where does my change go\n")
	if !ok {
		t.Fatal(`architecture.md has no "## Where does my change go" section`)
	}
	path := regexp.MustCompile("`((?:api|client|internal|cmd|scripts)/[A-Za-z0-9_./<>-]+)`")
	rows, named := 0, 0
	for _, line := range strings.Split(after, "\n") {
		if strings.HasPrefix(line, "## ") {
			break
		}
		if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| change ") {
			continue
		}
		rows++
		for _, m := range path.FindAllStringSubmatch(line, -1) {
			p := m[1]
			if i := strings.Index(p, "<"); i >= 0 { // internal/cli/<command>.go: its directory
				p = filepath.Dir(p[:i] + "x")
			}
			named++
			if _, err := os.Stat(filepath.Join("..", p)); err != nil {
				t.Errorf("architecture.md's \"Where does my change go\" names %s, which does not exist: update the row", m[1])
			}
		}
	}
	if rows < 10 || named < rows {
		t.Fatalf("found %d rows naming %d paths in \"Where does my change go\"; want at least ten rows, each naming a file", rows, named)
	}
}
