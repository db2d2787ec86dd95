package server

import (
	"crypto/tls"
	"log"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// What a peer of the API may hold (docs/security.md, "The API survives
// hostile peers"): every connection is bounded in time (Timeouts), the
// TCP listener in number (at most MaxConns at once, MaxConnsPerAddress
// from one address; the unix socket is the operator's and counts in
// neither), and a request without the token ends its connection. Refused
// peers are counted (pristine_api_refused_total) and logged at most once
// per peerLogEvery per kind.

// Timeouts bound how long a connection to the API may take over each
// part of its life. A zero field takes DefaultTimeouts' value.
//
// None of them bounds how long a handler runs: a lease request may wait
// an hour for a database and `pool up` streams its progress for minutes.
// Header and Body make the server's ReadTimeout, which net/http lifts
// once a request's body is read (it then reads the connection only to
// tell a client that went away); Write is a deadline on each write of an
// answer, renewed before every write, so a handler that waits long and
// then answers is not cut, while a peer that stops reading is (a server
// WriteTimeout would cut every answer later than it).
type Timeouts struct {
	Header time.Duration // the TLS handshake, request line and headers
	Body   time.Duration // a request's body, after its headers
	Write  time.Duration // each write of an answer
	Idle   time.Duration // a kept-alive connection between requests
}

// DefaultTimeouts are the API's timeouts unless a Server sets its own.
var DefaultTimeouts = Timeouts{Header: 10 * time.Second, Body: 30 * time.Second, Write: 30 * time.Second, Idle: 60 * time.Second}

func (t Timeouts) orDefault() Timeouts {
	d := DefaultTimeouts
	for _, f := range []struct{ v, def *time.Duration }{{&t.Header, &d.Header}, {&t.Body, &d.Body}, {&t.Write, &d.Write}, {&t.Idle, &d.Idle}} {
		if *f.v <= 0 {
			*f.v = *f.def
		}
	}
	return t
}

// httpServer is an http.Server for handler h with the Server's timeouts
// and an error log that counts and quiets failed TLS handshakes.
func (s *Server) httpServer(h http.Handler) *http.Server {
	t := s.Timeouts.orDefault()
	return &http.Server{Handler: t.bound(h), ReadHeaderTimeout: t.Header, ReadTimeout: t.Header + t.Body, IdleTimeout: t.Idle,
		ErrorLog: log.New(errorLogWriter{s}, "", 0)}
}

// bound renews the write deadline of a request's connection before each
// write of its answer (Timeouts.Write).
func (t Timeouts) bound(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		dw := &writeDeadline{ResponseWriter: w, rc: http.NewResponseController(w), d: t.Write}
		dw.renew()
		next.ServeHTTP(dw, r)
		dw.renew() // what the handler left buffered is written after it returns
	})
}

// writeDeadline renews its connection's write deadline before every write.
type writeDeadline struct {
	http.ResponseWriter
	rc *http.ResponseController
	d  time.Duration
}

func (w *writeDeadline) renew() { _ = w.rc.SetWriteDeadline(time.Now().Add(w.d)) }

func (w *writeDeadline) Write(p []byte) (int, error) {
	w.renew()
	return w.ResponseWriter.Write(p)
}

// Flush writes what is buffered (the NDJSON stream of `pool up`).
func (w *writeDeadline) Flush() {
	w.renew()
	_ = w.rc.Flush()
}

// Unwrap lets http.ResponseController reach the connection.
func (w *writeDeadline) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Reasons a peer of the API over TCP is refused, the label of
// pristine_api_refused_total.
const (
	refusedUnauthorized = "unauthorized"  // a request without the token: 401
	refusedHandshake    = "tls_handshake" // a failed TLS handshake
	refusedTotal        = "connection_cap"
	refusedPerAddress   = "address_cap"
)

var refusedReasons = []string{refusedUnauthorized, refusedHandshake, refusedTotal, refusedPerAddress}

// peerLogEvery is how often, at most, a refused peer of each kind is
// logged; the lines dropped meanwhile are counted in the next one.
var peerLogEvery = 10 * time.Second

// quietLog admits at most one line per interval and counts the others.
type quietLog struct {
	mu      sync.Mutex
	next    time.Time
	dropped int
}

// admit reports whether a line may be logged now, and how many were
// dropped since the last one.
func (q *quietLog) admit(now time.Time, every time.Duration) (bool, int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if now.Before(q.next) {
		q.dropped++
		return false, 0
	}
	n := q.dropped
	q.next, q.dropped = now.Add(every), 0
	return true, n
}

// peerLogs are the quiet logs of refused peers, one per reason.
type peerLogs struct {
	once sync.Once
	logs map[string]*quietLog
}

// refused counts a refused peer and logs it, quietly.
func (s *Server) refused(reason, remote, detail string) {
	s.metrics.refused.WithLabelValues(reason).Inc()
	s.peerLogs.once.Do(func() {
		s.peerLogs.logs = map[string]*quietLog{}
		for _, r := range refusedReasons {
			s.peerLogs.logs[r] = &quietLog{}
		}
	})
	if ok, dropped := s.peerLogs.logs[reason].admit(time.Now(), peerLogEvery); ok {
		s.log.Warn("refused a peer of the API", "reason", reason, "remote", remote, "detail", detail, "suppressed", dropped)
	}
}

// errorLogWriter is the http.Servers' error log: a failed TLS handshake
// (the only report of one net/http gives is this line) is counted and
// logged quietly, anything else logged as it comes.
type errorLogWriter struct{ s *Server }

func (e errorLogWriter) Write(p []byte) (int, error) {
	line := strings.TrimSpace(string(p))
	if rest, ok := strings.CutPrefix(line, "http: TLS handshake error from "); ok {
		remote, why, _ := strings.Cut(rest, ": ")
		e.s.refused(refusedHandshake, remote, why)
		return len(p), nil
	}
	e.s.log.Warn("http server", "err", line)
	return len(p), nil
}

// ConnCaps are the caps on the API's TCP connections the daemon takes
// when it is given none: a quarter of the open-file limit nofile in total
// (the rest is left to the unix socket, the slots' connections and the
// files of the daemon; lease waiters are capped at a quarter too), at
// least 16 and at most 16384, and a quarter of that from one address.
func ConnCaps(nofile uint64) (total, perAddress int) {
	total = int(min(max(nofile/4, 16), 16384))
	return total, max(total/4, 4)
}

// connCaps are the caps in force: MaxConns and MaxConnsPerAddress, or
// ConnCaps of the open-file limit. Go raises the soft limit to the hard
// one as a program starts (and gives its children the old one back), so
// the soft limit read here is the highest the daemon may use.
func (s *Server) connCaps() (total, perAddress int) {
	var lim unix.Rlimit
	nofile := uint64(1024)
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &lim) == nil {
		nofile = lim.Cur
	}
	total, perAddress = ConnCaps(nofile)
	if s.MaxConns > 0 {
		total = s.MaxConns
	}
	if s.MaxConnsPerAddress > 0 {
		perAddress = s.MaxConnsPerAddress
	}
	return total, min(perAddress, total)
}

// listenTCP wraps the TCP listener: the connection caps, then TLS when
// the Server has a configuration. It returns the URL scheme.
func (s *Server) listenTCP(ln net.Listener) (net.Listener, string) {
	total, per := s.connCaps()
	ln = &capListener{Listener: ln, total: total, perAddr: per, byAddr: map[string]int{}, refused: s.refused}
	if s.TLS != nil {
		return tls.NewListener(ln, s.TLS), "https"
	}
	return ln, "http"
}

// capListener closes at once a connection over its caps: total open at
// once, or perAddr from one remote address (the host, any port).
type capListener struct {
	net.Listener
	total, perAddr int
	refused        func(reason, remote, detail string)

	mu     sync.Mutex
	open   int
	byAddr map[string]int
}

func (l *capListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		host, _, err := net.SplitHostPort(c.RemoteAddr().String())
		if err != nil {
			host = c.RemoteAddr().String()
		}
		if reason, detail := l.admit(host); reason != "" {
			c.Close()
			l.refused(reason, c.RemoteAddr().String(), detail)
			continue
		}
		return &cappedConn{Conn: c, l: l, host: host}, nil
	}
}

// admit takes a place for a connection from host, or says why there is
// none.
func (l *capListener) admit(host string) (reason, detail string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.open >= l.total:
		return refusedTotal, "the API's TCP connections are at their cap (serve --max-connections)"
	case l.byAddr[host] >= l.perAddr:
		return refusedPerAddress, "this address's TCP connections are at their cap (serve --max-connections-per-address)"
	}
	l.open++
	l.byAddr[host]++
	return "", ""
}

func (l *capListener) release(host string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.open--
	if l.byAddr[host]--; l.byAddr[host] <= 0 {
		delete(l.byAddr, host)
	}
}

// cappedConn gives its place back when it is closed.
type cappedConn struct {
	net.Conn
	l    *capListener
	host string
	once sync.Once
}

func (c *cappedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c.host) })
	return err
}
