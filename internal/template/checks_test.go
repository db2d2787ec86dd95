package template_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pristinedb/pristine/internal/template"
	"github.com/pristinedb/pristine/internal/template/templatetest"
)

// TestEndChecksOnePass: the end-of-build checks, read in one pass over
// information_schema, still find what each looks for: the counter of a
// table whose top rows were deleted is persisted (and only that one: a
// table whose counter is its largest id + 1 is left alone), and a MEMORY
// table holding rows is warned about, by name, while an empty one is not.
func TestEndChecksOnePass(t *testing.T) {
	st := templatetest.NewBuilder(t, "auto")
	var lines []string
	st.Progress = func(format string, args ...any) { lines = append(lines, fmt.Sprintf(format, args...)) }
	sql := `CREATE TABLE holes (id INT AUTO_INCREMENT PRIMARY KEY, v INT) ENGINE=InnoDB;
INSERT INTO holes (v) VALUES (1), (2), (3), (4), (5);
DELETE FROM holes WHERE id > 2;
CREATE TABLE dense (id INT AUTO_INCREMENT PRIMARY KEY, v INT) ENGINE=InnoDB;
INSERT INTO dense (v) VALUES (1), (2);
CREATE TABLE mem (id INT PRIMARY KEY) ENGINE=MEMORY;
INSERT INTO mem VALUES (1);
CREATE TABLE mem_empty (id INT PRIMARY KEY) ENGINE=MEMORY;
`
	m := templatetest.Build(t, st, "app", sql, template.BuildOptions{Workers: 1})
	all := strings.Join(lines, "\n")
	if !strings.Contains(all, "persisted the AUTO_INCREMENT counters of 1 tables") {
		t.Errorf("the counter of app.holes (6, rows up to 2) was not persisted alone:\n%s", all)
	}
	warnings := strings.Join(m.Warnings, "\n")
	if !strings.Contains(warnings, "MEMORY tables lose their rows") || !strings.Contains(warnings, "app.mem ") {
		t.Errorf("no warning about the MEMORY table app.mem holding rows: %q", m.Warnings)
	}
	if strings.Contains(warnings, "mem_empty") {
		t.Errorf("an empty MEMORY table was warned about: %q", m.Warnings)
	}
}
