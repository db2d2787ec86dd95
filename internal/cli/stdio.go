package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// Stdio is where a command reads and writes: the process's standard
// streams in the binary, buffers in tests. No command in this package
// writes to os.Stdout or os.Stderr itself (stdio_test.go checks that).
type Stdio struct {
	In       io.Reader
	Out, Err io.Writer
}

// OSStdio is the process's own standard streams, as cmd/pristine wires them.
func OSStdio() Stdio { return Stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr} }

// orDefaults fills the streams left nil: no input, output thrown away.
func (s Stdio) orDefaults() Stdio {
	if s.In == nil {
		s.In = eofReader{}
	}
	if s.Out == nil {
		s.Out = io.Discard
	}
	if s.Err == nil {
		s.Err = io.Discard
	}
	return s
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

// PrintJSON writes v to the command's standard output as indented JSON.
func (g *Globals) PrintJSON(v any) error {
	enc := json.NewEncoder(g.IO.Out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// printJSON is PrintJSON, the name the command files use.
func (g *Globals) printJSON(v any) error { return g.PrintJSON(v) }

// Errf prints a line to the command's standard error.
func (g *Globals) Errf(format string, args ...any) {
	fmt.Fprintf(g.IO.Err, format+"\n", args...)
}

// stderrf is Errf, the name the command files use.
func (g *Globals) stderrf(format string, args ...any) { g.Errf(format, args...) }

// ErrIsTerminal reports whether the command's standard error is a
// terminal; progress is shown only there unless asked for.
func (g *Globals) ErrIsTerminal() bool {
	f, ok := g.IO.Err.(*os.File)
	return ok && isTerminal(f)
}

// OutIsTerminal reports whether the command's standard output is a terminal.
func (g *Globals) OutIsTerminal() bool {
	f, ok := g.IO.Out.(*os.File)
	return ok && isTerminal(f)
}
