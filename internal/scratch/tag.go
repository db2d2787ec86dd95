package scratch

import "fmt"

// tagged is an error that reads as its message alone but also matches a
// sentinel with errors.Is, so a hint can end the line.
type tagged struct {
	err  error
	kind error
}

func (t *tagged) Error() string   { return t.err.Error() }
func (t *tagged) Unwrap() []error { return []error{t.err, t.kind} }

// tag formats an error that matches kind.
func tag(kind error, format string, a ...any) error {
	return &tagged{err: fmt.Errorf(format, a...), kind: kind}
}
