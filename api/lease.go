package api

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"
)

// LeaseRequest asks for a lease (POST /v1/leases).
type LeaseRequest struct {
	Template string  `json:"template,omitempty"` // empty: the only pool
	Holder   string  `json:"holder,omitempty"`
	TTL      float64 `json:"ttl_seconds,omitempty"`  // 0: 30 minutes; at most MaxTTL
	Wait     float64 `json:"wait_seconds,omitempty"` // 0: 60 seconds; at most MaxWait
	// PID is the holder's process on the daemon's host; the lease is
	// reclaimed when it exits. Zero: only the TTL reclaims it.
	PID int `json:"pid,omitempty"`
	// MinSize is how many slots the caller's run uses at once (its
	// processes): a pool with fewer is grown to MinSize first, at once,
	// within the daemon's --max-memory/--max-disk, and the request waits
	// only for a slot to start. When the slots do not fit, the request
	// fails at once (507) with an error naming the limit, without waiting.
	// 0: no growth.
	MinSize int `json:"min_size,omitempty"`
}

// Bounds of the durations a client may ask for. A lease lives at most
// MaxTTL without an extension (a forgotten lease is reclaimed within a
// week); a request waits at most MaxWait for a free database (a client
// wanting longer asks again).
const (
	DefaultTTL  = 30 * time.Minute
	MaxTTL      = 7 * 24 * time.Hour
	DefaultWait = time.Minute
	MaxWait     = time.Hour
)

// Lease is a database handed out to one holder. Its credentials (Password,
// and DSN, URL and Env, which carry it) marshal only when Password was
// revealed: see Secret.
type Lease struct {
	ID       string `json:"id"`
	Template string `json:"template"`
	Slot     int    `json:"slot"`
	Holder   string `json:"holder,omitempty"`
	Host     string `json:"host"`
	Port     int    `json:"port"`
	Socket   string `json:"socket"`
	User     string `json:"user"`
	Password Secret `json:"password"`
	Database string `json:"database"`
	// DSN is the go-sql-driver/mysql form of the connection, over TCP.
	DSN string `json:"dsn"`
	// URL is mysql://user:password@127.0.0.1:port/db.
	URL     string    `json:"url"`
	Created time.Time `json:"created"`
	Expires time.Time `json:"expires"`
	// Env is the environment that hands this database to a program; its
	// MYSQL_HOME makes the mariadb clients read OptionFile.
	Env []string `json:"env"`
	// OptionFile is a my.cnf with this lease's connection, 0600, removed
	// when the lease ends.
	OptionFile string `json:"option_file,omitempty"`
	// Kept leases are held for debugging: no expiry, no reset until released.
	Kept bool `json:"kept,omitempty"`
	// PID is the holder's process; the lease is reclaimed when it exits.
	PID      int    `json:"pid,omitempty"`
	PIDStart string `json:"pid_start,omitempty"`
	// Clone names the clone of the slot the lease was handed out on.
	Clone string `json:"clone,omitempty"`
	// CA is the PEM certificate of the CA that issued the slot server's
	// certificate, when the slot is reachable over the network (`serve
	// --slot-address`): connect with TLS, verifying the server's
	// certificate against CA and its name against Host. Empty: a
	// loopback slot, no TLS. The Go client registers it for the DSN's
	// tls parameter.
	CA string `json:"ca,omitempty"`
	// Group is the holder group the lease counts against (`serve
	// --max-leases-per-group`).
	Group string `json:"group,omitempty"`
}

// MarshalJSON encodes the lease, with DSN, URL and Env left empty unless
// Password was revealed: they carry the password too.
func (l Lease) MarshalJSON() ([]byte, error) {
	type plain Lease // without this method
	if !l.Password.Revealed() {
		l.DSN, l.URL, l.Env = "", "", nil
	}
	return json.Marshal(plain(l))
}

// ReleaseResult answers a release (DELETE /v1/leases/{id}).
type ReleaseResult struct {
	Released string `json:"released"`
	// Reset is false when the database was released unchanged, checked,
	// and handed out again without a reset; true otherwise, also while
	// the check runs (Checking).
	Reset bool `json:"reset"`
	// Checking is true when release --unchanged's check runs in the
	// daemon after this answer (the default; ?wait=true waits for it and
	// answers its verdict in Reset). The lease is ended either way: its
	// database is handed out again, or reset, once the check is done,
	// never before; whether it was reused is counted in the pool's
	// stats (reused) and pristine_leases_reused_total.
	Checking bool `json:"checking,omitempty"`
}

// ExtendRequest asks for more time on a lease.
type ExtendRequest struct {
	TTL float64 `json:"ttl_seconds"` // more than 0, at most MaxTTL
}

// ErrorBody is the body of every error response.
type ErrorBody struct {
	Error string `json:"error"`
	// Code names the error's kind for programs (CodeUnkeyedBuild), where
	// a client answers it in its own terms; empty for most errors.
	Code string `json:"code,omitempty"`
}

// WithCredentials returns the lease with its password revealed, for the
// one output that hands the lease to its holder (the daemon's answer to a
// lease request, `pristine lease --json`).
func (l Lease) WithCredentials() Lease {
	l.Password = Reveal(l.Password.Value())
	return l
}

// TLSConfigName is the name under which a client registers the TLS
// configuration of a lease with CA caPEM and host (the DSN's tls
// parameter names it): the same CA and host always give the same name.
func TLSConfigName(caPEM, host string) string {
	h := sha256.Sum256([]byte(caPEM + "\x00" + host))
	return "pristine-" + hex.EncodeToString(h[:8])
}
