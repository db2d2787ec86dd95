// Package client talks to a pristine daemon, over its unix socket or over
// loopback TCP with a bearer token. Besides the daemon's API it carries the
// flow test helpers share: build a template once across processes
// (EnsureTemplate), bring its pool up (EnsurePool), and key a template by
// the content of the files that define it (ContentKey).
package client

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/pristinedb/pristine/api"
)

// Client is a connection to one daemon.
type Client struct {
	hc     *http.Client
	socket string // the unix socket, or "" over TCP
	base   string // "http://pristine" over the socket, "http://ADDR" over TCP
	token  string // the bearer token over TCP
	// Group, when set, names the holder group of this client's leases
	// (the Pristine-Group header), for a daemon with
	// --max-leases-per-group; a group token's group cannot be changed.
	Group string
	// Notify, when set, is told what the client did that its caller did
	// not ask for in so many words (EnsurePool grew a pool); nil writes
	// it to standard error.
	Notify func(msg string)
}

// notify tells Notify, or standard error, msg.
func (c *Client) notify(msg string) {
	if c.Notify != nil {
		c.Notify(msg)
		return
	}
	fmt.Fprintln(os.Stderr, "pristine: "+msg)
}

// APIError is an error the daemon answered with. Status 400 means a
// request the daemon refuses (the message gives the allowed values); 429
// means too many lease requests are in progress: retry after RetryAfter.
type APIError struct {
	Status  int
	Message string
	// RetryAfter is the daemon's Retry-After (sent with 429), or 0.
	RetryAfter time.Duration
	// Code is the daemon's machine-readable kind of the error
	// (api.CodeUnkeyedBuild), or "".
	Code string
}

func (e *APIError) Error() string { return e.Message }

// ErrNoDaemon means nothing answers on the socket.
var ErrNoDaemon = errors.New("no pristine daemon is running")

// New returns a client for the daemon listening on socket.
func New(socket string) *Client {
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", socket)
	}}
	return &Client{hc: &http.Client{Transport: tr}, socket: socket, base: "http://pristine"}
}

// NewTCP returns a client for a daemon serving TCP (`pristine serve
// --listen ADDR`); token is the one kept in <root>/token (or a
// --group-tokens token). addr is HOST:PORT or an http:// or https:// URL;
// for https with the root's own CA, call TrustCA.
func NewTCP(addr, token string) *Client {
	base := strings.TrimSuffix(addr, "/")
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	return &Client{hc: &http.Client{}, base: base, token: token}
}

// Where names the daemon the client talks to: its socket or its URL.
func (c *Client) Where() string {
	if c.socket != "" {
		return c.socket
	}
	return c.base
}

func (c *Client) do(ctx context.Context, method, path string, body, out any) error {
	resp, err := c.send(ctx, method, path, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("%s %s: read answer: %w", method, path, err)
	}
	return nil
}

// roundTrip sends a request with body as JSON and the token, if any.
func (c *Client) roundTrip(ctx context.Context, method, path string, body any) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if c.Group != "" {
		req.Header.Set("Pristine-Group", c.Group)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, c.transportError(method, path, err)
	}
	return resp, nil
}

func (c *Client) send(ctx context.Context, method, path string, body any) (*http.Response, error) {
	resp, err := c.roundTrip(ctx, method, path, body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 300 {
		defer resp.Body.Close()
		var eb api.ErrorBody
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
		if json.Unmarshal(b, &eb) != nil || eb.Error == "" {
			eb.Error = fmt.Sprintf("%s %s: %s: %s", method, path, resp.Status, bytes.TrimSpace(b))
		}
		ae := &APIError{Status: resp.StatusCode, Message: eb.Error, Code: eb.Code}
		if n, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && n >= 0 {
			ae.RetryAfter = time.Duration(n) * time.Second
		}
		return nil, ae
	}
	return resp, nil
}

// transportError says what went wrong before the daemon answered; a
// daemon that is not there is ErrNoDaemon, with how to start one.
func (c *Client) transportError(method, path string, err error) error {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return fmt.Errorf("%w on %s: start one with `pristine pool up` or `pristine serve`", ErrNoDaemon, c.Where())
	}
	return fmt.Errorf("%s %s: %w", method, path, err)
}

// Health checks that the daemon answers.
func (c *Client) Health(ctx context.Context) error {
	return c.do(ctx, "GET", "/v1/health", nil, &map[string]any{})
}

// PoolUp brings up a pool and reports progress until it is ready.
func (c *Client) PoolUp(ctx context.Context, req api.PoolRequest, progress func(ready, total int)) (*api.PoolStatus, error) {
	resp, err := c.send(ctx, "POST", "/v1/pools", req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var ev api.PoolEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return nil, fmt.Errorf("pool up: read progress: %w", err)
		}
		switch {
		case ev.Error != "":
			return nil, &APIError{Status: ev.Code, Message: ev.Error}
		case ev.Status != nil:
			return ev.Status, nil
		case progress != nil:
			progress(ev.Ready, ev.Total)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("pool up: %w", err)
	}
	return nil, errors.New("pool up: the daemon closed the connection before the pool was ready: see serve.log under the root")
}

// PoolDown stops a pool and removes its clones.
func (c *Client) PoolDown(ctx context.Context, template string) (*api.PoolStatus, error) {
	var st api.PoolStatus
	return &st, c.do(ctx, "DELETE", "/v1/pools/"+url.PathEscape(template), nil, &st)
}

// Pools lists the pools that are up.
func (c *Client) Pools(ctx context.Context) ([]api.PoolStatus, error) {
	var out []api.PoolStatus
	return out, c.do(ctx, "GET", "/v1/pools", nil, &out)
}

// Pool reports one pool with its slots.
func (c *Client) Pool(ctx context.Context, template string) (*api.PoolStatus, error) {
	var st api.PoolStatus
	return &st, c.do(ctx, "GET", "/v1/pools/"+url.PathEscape(template), nil, &st)
}

// PoolDisk is Pool with the pool's disk use measured (Disk): a walk of
// every slot's files, which the daemon reuses for 5 s. Poll Pool, not
// this.
func (c *Client) PoolDisk(ctx context.Context, template string) (*api.PoolStatus, error) {
	var st api.PoolStatus
	return &st, c.do(ctx, "GET", "/v1/pools/"+url.PathEscape(template)+"?disk=true", nil, &st)
}

// Lease acquires a pristine database.
func (c *Client) Lease(ctx context.Context, req api.LeaseRequest) (*api.Lease, error) {
	var l api.Lease
	return withTLS(&l, c.do(ctx, "POST", "/v1/leases", req, &l))
}

// Release returns a lease. Unchanged asks pristine to check that nothing
// was written and hand the database out again without a reset; the check
// runs in the daemon after the answer (the result's Checking).
func (c *Client) Release(ctx context.Context, id string, unchanged bool) (*api.ReleaseResult, error) {
	return c.release(ctx, id, unchanged, false)
}

// ReleaseWait is Release waiting for the unchanged check's verdict: the
// result's Reset is false when the database was handed out again.
func (c *Client) ReleaseWait(ctx context.Context, id string, unchanged bool) (*api.ReleaseResult, error) {
	return c.release(ctx, id, unchanged, true)
}

func (c *Client) release(ctx context.Context, id string, unchanged, wait bool) (*api.ReleaseResult, error) {
	q := url.Values{}
	if unchanged {
		q.Set("mode", "unchanged")
	}
	if wait {
		q.Set("wait", "true")
	}
	path := "/v1/leases/" + url.PathEscape(id)
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var res api.ReleaseResult
	return &res, c.do(ctx, "DELETE", path, nil, &res)
}

// GetLease returns one lease with its credentials.
func (c *Client) GetLease(ctx context.Context, id string) (*api.Lease, error) {
	var l api.Lease
	return withTLS(&l, c.do(ctx, "GET", "/v1/leases/"+url.PathEscape(id), nil, &l))
}

// Keep holds a lease for debugging: it is not reclaimed or reset until
// released.
func (c *Client) Keep(ctx context.Context, id string) (*api.Lease, error) {
	var l api.Lease
	return withTLS(&l, c.do(ctx, "POST", "/v1/leases/"+url.PathEscape(id)+"/keep", nil, &l))
}

// Extend gives a lease ttl more from now.
func (c *Client) Extend(ctx context.Context, id string, ttl time.Duration) (*api.Lease, error) {
	var l api.Lease
	return withTLS(&l, c.do(ctx, "POST", "/v1/leases/"+url.PathEscape(id)+"/extend", api.ExtendRequest{TTL: ttl.Seconds()}, &l))
}

// Fork makes template name from lease id's current state: everything
// committed before the call. The lease and its connections go on. With
// a key (e.g. a hash of the fixture files), a later Fork of a lease of
// the same template with the same key returns the template made before
// at once (Built false). Lease the fork like any template.
func (c *Client) Fork(ctx context.Context, id, name, key string) (*api.ForkAnswer, error) {
	var a api.ForkAnswer
	if err := c.do(ctx, "POST", "/v1/leases/"+url.PathEscape(id)+"/fork", api.ForkRequest{Name: name, Key: key}, &a); err != nil {
		return nil, err
	}
	return &a, nil
}

// Leases lists the leases held now (without credentials).
func (c *Client) Leases(ctx context.Context) ([]api.Lease, error) {
	var out []api.Lease
	return out, c.do(ctx, "GET", "/v1/leases", nil, &out)
}

// Shutdown asks the daemon to bring every pool down and exit.
func (c *Client) Shutdown(ctx context.Context) error {
	return c.do(ctx, "POST", "/v1/shutdown", nil, nil)
}

// TrustCA makes the client verify the daemon's certificate (https) against
// the CA certificates of caPEM only, e.g. the <root>/tls/ca.pem of the
// daemon's root (a Kubernetes Secret hands it to test pods).
func (c *Client) TrustCA(caPEM []byte) error {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return errors.New("trust CA: no PEM certificate in it: give the ca.pem of the daemon's root (PRISTINE_CA_FILE)")
	}
	c.hc = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	return nil
}

// Remote tells whether the client talks to its daemon over TCP: its
// process is then not one the daemon can watch (the daemon ignores a
// remote holder's PID), and only a lease's TTL reclaims it. A holder on
// another machine keeps a short TTL and renews it (Heartbeat), so a
// killed holder's leases come back within one TTL.
func (c *Client) Remote() bool { return c.socket == "" }

// Heartbeat extends lease id to ttl from now, every ttl/3, until ctx ends
// (the holder released the lease) or the lease is gone; onError, when
// set, is told each failed extension.
func (c *Client) Heartbeat(ctx context.Context, id string, ttl time.Duration, onError func(error)) {
	t := time.NewTicker(max(ttl/3, 100*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, err := c.Extend(ctx, id, ttl); err != nil && ctx.Err() == nil {
			var ae *APIError
			if errors.As(err, &ae) && (ae.Status == http.StatusNotFound || ae.Status == http.StatusGone) {
				return
			}
			if onError != nil {
				onError(err)
			}
		}
	}
}
