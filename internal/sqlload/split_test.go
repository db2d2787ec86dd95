package sqlload

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// splitAll splits input read through r and fails the test on an error.
func splitAll(t testing.TB, r io.Reader) []Statement {
	t.Helper()
	var out []Statement
	s := NewSplitter(r)
	for {
		st, err := s.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("split: %v", err)
		}
		out = append(out, st)
	}
}

// readers wraps an input in readers that cut it at every possible place.
var readers = map[string]func(string) io.Reader{
	"whole":   func(s string) io.Reader { return strings.NewReader(s) },
	"onebyte": func(s string) io.Reader { return iotest.OneByteReader(strings.NewReader(s)) },
	"half":    func(s string) io.Reader { return iotest.HalfReader(strings.NewReader(s)) },
}

type want struct {
	text  string
	delim string
	line  int
}

func TestSplit(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []want
	}{
		{"two", "SELECT 1;SELECT 2;", []want{{"SELECT 1", ";", 1}, {"SELECT 2", ";", 1}}},
		{"no final delimiter", "SELECT 1;\nSELECT 2\n", []want{{"SELECT 1", ";", 1}, {"SELECT 2\n", "", 2}}},
		{"comments between", "-- a ; b\n# c ; d\n/* e ; f */ SELECT 1; -- tail\n",
			[]want{{"SELECT 1", ";", 3}}},
		{"dash needs a blank", "SELECT 1--1;", []want{{"SELECT 1--1", ";", 1}}},
		{"dash at end of input", "SELECT 1;\n--", []want{{"SELECT 1", ";", 1}}},
		{"comments inside keep delimiters", "SELECT 1 /* ; */ + 1 -- ;\n;\nSELECT 2 # ;\n;",
			[]want{{"SELECT 1 /* ; */ + 1 -- ;\n", ";", 1}, {"SELECT 2 # ;\n", ";", 3}}},
		{"executable comments are sent", "/*!40101 SET NAMES utf8mb4 */;\n/*M!100101 SET @x=1 */;\n",
			[]want{{"/*!40101 SET NAMES utf8mb4 */", ";", 1}, {"/*M!100101 SET @x=1 */", ";", 2}}},
		{"executable comment with a quoted delimiter", "/*!50003 SELECT ';' */;",
			[]want{{"/*!50003 SELECT ';' */", ";", 1}}},
		{"quotes", `INSERT INTO t VALUES ('a;b',"c;d",'it\'s;','x''y;',` + "`e;f`" + `);`,
			[]want{{`INSERT INTO t VALUES ('a;b',"c;d",'it\'s;','x''y;',` + "`e;f`" + `)`, ";", 1}}},
		{"escaped backslash closes", `SELECT '\\';SELECT 2;`, []want{{`SELECT '\\'`, ";", 1}, {"SELECT 2", ";", 1}}},
		{"backtick has no escapes", "SELECT `a\\`;SELECT 2;", []want{{"SELECT `a\\`", ";", 1}, {"SELECT 2", ";", 1}}},
		{"hash in a string", "SELECT '#;';", []want{{"SELECT '#;'", ";", 1}}},
		{"lone delimiters", ";;\n;SELECT 1;;", []want{{"SELECT 1", ";", 2}}},
		{"crlf", "SELECT 1;\r\nSELECT\r\n 2;\r\n-- c\r\nSELECT 3;\r\n",
			[]want{{"SELECT 1", ";", 1}, {"SELECT\r\n 2", ";", 2}, {"SELECT 3", ";", 5}}},
		{"delimiter", "DELIMITER ;;\nCREATE PROCEDURE p() BEGIN SELECT 1; SELECT 2; END ;;\nDELIMITER ;\nCALL p();\n",
			[]want{{"CREATE PROCEDURE p() BEGIN SELECT 1; SELECT 2; END ", ";;", 2}, {"CALL p()", ";", 4}}},
		{"delimiter lowercase with trailing words", "delimiter $$ ignored\r\nSELECT 1$$\ndelimiter ;\nSELECT 2;",
			[]want{{"SELECT 1", "$$", 2}, {"SELECT 2", ";", 4}}},
		{"delimiter is not a statement prefix", "DELIMITERS;", []want{{"DELIMITERS", ";", 1}}},
		{"mariadb-dump trigger",
			"DELIMITER ;;\n/*!50003 CREATE*/ /*!50017 DEFINER=`root`@`localhost`*/ /*!50003 TRIGGER t1 BEFORE INSERT ON t FOR EACH ROW BEGIN SET NEW.a = ';'; END */;;\nDELIMITER ;\n",
			[]want{{"/*!50003 CREATE*/ /*!50017 DEFINER=`root`@`localhost`*/ /*!50003 TRIGGER t1 BEFORE INSERT ON t FOR EACH ROW BEGIN SET NEW.a = ';'; END */", ";;", 2}}},
		{"unterminated string", "SELECT 'abc;\n", []want{{"SELECT 'abc;\n", "", 1}}},
		{"unterminated comment", "SELECT 1;/* abc", []want{{"SELECT 1", ";", 1}}},
		{"multi-line line numbers", "\n\nINSERT INTO t VALUES\n(1),\n(2);\n\nSELECT 1;",
			[]want{{"INSERT INTO t VALUES\n(1),\n(2)", ";", 3}, {"SELECT 1", ";", 7}}},
		{"empty", "", nil},
		{"only comments", "-- a\n/* b */\n# c", nil},
	}
	for _, tt := range tests {
		for rname, mk := range readers {
			t.Run(tt.name+"/"+rname, func(t *testing.T) {
				got := splitAll(t, mk(tt.in))
				if len(got) != len(tt.want) {
					t.Fatalf("got %d statements %+v, want %d", len(got), got, len(tt.want))
				}
				for i, w := range tt.want {
					g := got[i]
					if g.Text != w.text || g.Delim != w.delim || g.Line != w.line {
						t.Errorf("statement %d = (%q, %q, line %d), want (%q, %q, line %d)",
							i, g.Text, g.Delim, g.Line, w.text, w.delim, w.line)
					}
					if tt.in[g.Offset:g.Offset+int64(len(g.Text))] != g.Text {
						t.Errorf("statement %d: offset %d does not point at its text", i, g.Offset)
					}
				}
			})
		}
	}
}

func TestSplitDelimiterNeedsArgument(t *testing.T) {
	s := NewSplitter(strings.NewReader("SELECT 1;\nDELIMITER \t\nSELECT 2;"))
	s.Next()
	if _, err := s.Next(); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("got %v, want an error naming line 2", err)
	}
}

func TestSplitReadError(t *testing.T) {
	boom := errors.New("boom")
	// The input breaks off inside a statement, a comment, or between
	// statements.
	for _, in := range []string{"SELECT 1; SELECT 'x", "SELECT 1; -- x", "SELECT 1; /* x", "SELECT 1; "} {
		s := NewSplitter(io.MultiReader(strings.NewReader(in), iotest.ErrReader(boom)))
		if _, err := s.Next(); err != nil {
			t.Fatalf("%q: first statement: %v", in, err)
		}
		if _, err := s.Next(); !errors.Is(err, boom) {
			t.Errorf("%q: got %v, want the read error", in, err)
		}
	}
}

// TestSplitLongStatement splits an INSERT far larger than the read size,
// with values that straddle every read boundary.
func TestSplitLongStatement(t *testing.T) {
	var b bytes.Buffer
	b.WriteString("INSERT INTO t VALUES ")
	for i := 0; i < 200000; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`(1,'a\'b;c\\',"d;e",'`)
		b.WriteString(strings.Repeat("x", i%97))
		b.WriteString(`')`)
	}
	long := b.String()
	in := long + ";\nSELECT 1;"
	got := splitAll(t, strings.NewReader(in))
	if len(got) != 2 || got[0].Text != long || got[1].Text != "SELECT 1" || got[1].Line != 2 {
		t.Fatalf("got %d statements, want the long INSERT (%d bytes) and SELECT 1 on line 2", len(got), len(long))
	}
}

// reassemble writes statements back as SQL text that splits into the same
// statements; active holds the delimiter in force for each statement.
func reassemble(sts []Statement, active []string) string {
	var b strings.Builder
	cur := ";"
	for i, st := range sts {
		if active[i] != cur {
			b.WriteString("\nDELIMITER " + active[i] + "\n")
			cur = active[i]
		}
		b.WriteString(st.Text + st.Delim)
		if st.Delim != "" {
			b.WriteString("\n")
		}
	}
	return b.String()
}

// checkSplit asserts the splitter's invariants on one input.
func checkSplit(t *testing.T, in string) {
	s := NewSplitter(strings.NewReader(in))
	var got []Statement
	var active []string
	for {
		st, err := s.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return // only a DELIMITER without an argument fails
		}
		got = append(got, st)
		active = append(active, s.Delimiter())
	}
	end := int64(0)
	for i, st := range got {
		if st.Text == "" {
			t.Fatalf("statement %d is empty", i)
		}
		if st.Offset < end || st.Offset+int64(len(st.Text)) > int64(len(in)) {
			t.Fatalf("statement %d at offset %d overlaps the previous one or runs past the input", i, st.Offset)
		}
		if in[st.Offset:st.Offset+int64(len(st.Text))] != st.Text {
			t.Fatalf("statement %d: text is not the input at its offset", i)
		}
		if want := 1 + strings.Count(in[:st.Offset], "\n"); st.Line != want {
			t.Fatalf("statement %d: line %d, want %d", i, st.Line, want)
		}
		end = st.Offset + int64(len(st.Text)+len(st.Delim))
		if in[end-int64(len(st.Delim)):end] != st.Delim {
			t.Fatalf("statement %d: delimiter %q is not in the input after it", i, st.Delim)
		}
	}
	bytewise := splitAll(t, iotest.OneByteReader(strings.NewReader(in)))
	if len(bytewise) != len(got) {
		t.Fatalf("read a byte at a time: %d statements, want %d", len(bytewise), len(got))
	}
	for i := range got {
		if bytewise[i] != got[i] {
			t.Fatalf("read a byte at a time: statement %d is %+v, want %+v", i, bytewise[i], got[i])
		}
	}
	again := splitAll(t, strings.NewReader(reassemble(got, active)))
	if len(again) != len(got) {
		t.Fatalf("reassembled input splits into %d statements, want %d", len(again), len(got))
	}
	for i := range got {
		if again[i].Text != got[i].Text || again[i].Delim != got[i].Delim {
			t.Fatalf("statement %d: reassembled (%q, %q), want (%q, %q)", i, again[i].Text, again[i].Delim, got[i].Text, got[i].Delim)
		}
	}
}

func FuzzSplit(f *testing.F) {
	for _, s := range []string{
		"SELECT 1;SELECT 2;",
		"-- a\n# b\n/* c */SELECT 'a;b', \"c\\\";d\", `e;f`;",
		"/*!40101 SET NAMES utf8 */;\nDELIMITER ;;\nCREATE PROCEDURE p() BEGIN SELECT 1; END;;\nDELIMITER ;\n",
		"INSERT INTO t VALUES ('it''s', 'a\\'b');\r\n--\r\nSELECT 1--1;",
		"delimiter $\nSELECT 1$ SELECT '$' $",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		checkSplit(t, in)
	})
}

func BenchmarkSplit(b *testing.B) {
	var buf bytes.Buffer
	for buf.Len() < 32<<20 {
		buf.WriteString("INSERT INTO `t` VALUES (1,'alpha beta','2024-01-01 00:00:00',12.50,NULL,'{\\\"k\\\":1}'),(2,'gamma','2024-01-02 00:00:00',3.25,7,'x');\n")
	}
	in := buf.Bytes()
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		s := NewSplitter(bytes.NewReader(in))
		for {
			if _, err := s.Next(); err != nil {
				break
			}
		}
	}
}
