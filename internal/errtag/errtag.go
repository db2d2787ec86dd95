// Package errtag makes errors that read as their message alone, a cause and
// its fix in one line, yet still match a sentinel with errors.Is.
package errtag

import "fmt"

type tagged struct {
	err  error
	kind error
}

func (t *tagged) Error() string   { return t.err.Error() }
func (t *tagged) Unwrap() []error { return []error{t.err, t.kind} }

// New formats an error (with %w where it wraps a cause) that also matches
// kind.
func New(kind error, format string, a ...any) error {
	return &tagged{err: fmt.Errorf(format, a...), kind: kind}
}
