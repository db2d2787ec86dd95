// Package api holds the types of pristine's HTTP API as they travel on the
// wire: leases, pool status, template build requests and answers, error
// bodies. The daemon converts its own state to them at the edge; the Go
// client and pristinetest use them as they are. The package depends on the
// standard library only, so a test module importing the client pulls in
// nothing of the daemon.
//
// Passwords are Secret values: they marshal as "" unless revealed for the
// one response that must carry them (a lease to its holder, a template
// build session to its builder), so a new output path cannot leak one by
// forgetting to blank it.
package api

import "encoding/json"

// Secret is a password. Its zero value is empty. It marshals to JSON as ""
// unless it was made with Reveal, and prints as "[redacted]" with fmt, so
// logging or re-encoding a value never shows it; Value gives the password
// to the code that connects with it. A Secret decoded from JSON holds the
// value but is not revealed: encoding it again redacts it.
type Secret struct {
	v      string
	reveal bool
}

// Hidden returns a Secret holding password that marshals as "".
func Hidden(password string) Secret { return Secret{v: password} }

// Reveal returns a Secret holding password that marshals as itself: use it
// only in the answer that hands the password to the one who must connect.
func Reveal(password string) Secret { return Secret{v: password, reveal: true} }

// Value returns the password.
func (s Secret) Value() string { return s.v }

// Revealed reports whether the Secret marshals as its value.
func (s Secret) Revealed() bool { return s.reveal }

// String redacts the password for fmt and loggers.
func (s Secret) String() string {
	if s.v == "" {
		return ""
	}
	return "[redacted]"
}

// GoString redacts the password for %#v.
func (s Secret) GoString() string { return `api.Secret("` + s.String() + `")` }

// IsZero reports whether the Secret marshals as "", so that a field tagged
// omitzero is left out unless it carries a revealed password.
func (s Secret) IsZero() bool { return !s.reveal || s.v == "" }

// MarshalJSON gives the password only when it was revealed, else "".
func (s Secret) MarshalJSON() ([]byte, error) {
	if !s.reveal {
		return []byte(`""`), nil
	}
	return json.Marshal(s.v)
}

// UnmarshalJSON keeps the password, not revealed.
func (s *Secret) UnmarshalJSON(b []byte) error {
	var v string
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*s = Secret{v: v}
	return nil
}
