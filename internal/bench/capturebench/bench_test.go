package capturebench

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
)

func TestFKSQLCoversEveryRowOnce(t *testing.T) {
	var b bytes.Buffer
	if err := writeFKSQL(&b, 0.3); err != nil {
		t.Fatal(err)
	}
	for _, tb := range fkTables(0.3) {
		// Chunks of 100000 rows: the last one ends exactly at the row count.
		last := "_to_" + itoa(tb.rows) + ";"
		if !strings.Contains(b.String(), "INSERT INTO "+tb.name+" ") || !strings.Contains(b.String(), last) {
			t.Errorf("table %s: no INSERT ending at row %d", tb.name, tb.rows)
		}
	}
	if n := strings.Count(b.String(), "FOREIGN KEY"); n != 5 {
		t.Errorf("%d foreign keys, want 5", n)
	}
}

func TestMarkdownEscapesPipes(t *testing.T) {
	var b bytes.Buffer
	rep := &Report{Cores: 2, Load: "1 1 1", Results: []Result{
		{Dataset: "d", Method: mDump, Seconds: 2},
		{Dataset: "d", Method: mLogical, Seconds: 1, Baseline: mDump, Ratio: 2},
	}}
	if err := Markdown(&b, rep); err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(strings.TrimSpace(b.String()), "\n")[2:] {
		if cells := strings.Count(strings.ReplaceAll(l, `\|`, ""), "|"); cells != 5 {
			t.Errorf("row %q has %d unescaped pipes, want 5", l, cells)
		}
	}
	if !strings.Contains(b.String(), "2.00x vs mariadb-dump \\| mariadb") {
		t.Errorf("ratio missing:\n%s", b.String())
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
