package server

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"

	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/pool"
	"github.com/pristinedb/pristine/internal/rootdir"
	"github.com/pristinedb/pristine/internal/tlsca"
)

// A pool node other machines use (docs/fleet.md, "A pool node on the
// network"; docs/security.md, "Network"): slots listen on
// --slot-address with TLS, leases name --advertise and carry the root's
// CA, the API over TCP is served with TLS, and each holder group may
// hold at most --max-leases-per-group leases at once.

// SlotNetwork is the pool.Network of `serve --slot-address bind
// --advertise host [--slot-tls]`: nil for loopback (the default); for any
// other address, or with forceTLS, TLS with a certificate the root's CA
// issues for the advertised host (and the bind address).
func SlotNetwork(root *rootdir.Root, bind, advertise string, forceTLS bool) (*pool.Network, error) {
	if bind == "" && forceTLS {
		bind = "127.0.0.1"
	}
	if bind == "" {
		if advertise != "" && !pool.IsLoopback(advertise) {
			return nil, fmt.Errorf("--advertise %s without --slot-address: slots listen on loopback, which %s cannot reach; pass --slot-address ADDR (the address other machines reach this one at)", advertise, advertise)
		}
		return nil, nil
	}
	if net.ParseIP(bind) == nil {
		return nil, fmt.Errorf("--slot-address %q: not an IP address: give the address of this host's interface the clients reach (e.g. the pod IP), or 0.0.0.0 for all", bind)
	}
	n := &pool.Network{Bind: bind, Advertise: advertise}
	if n.Advertise == "" {
		if ip := net.ParseIP(bind); ip.IsUnspecified() {
			return nil, fmt.Errorf("--slot-address %s listens on every interface: name the host clients should connect to with --advertise HOST", bind)
		}
		n.Advertise = bind
	}
	if pool.IsLoopback(bind) && !forceTLS {
		return n, nil
	}
	ca, err := tlsca.Load(root.Path)
	if err != nil {
		return nil, err
	}
	hosts := []string{n.Advertise}
	if bind != n.Advertise && !net.ParseIP(bind).IsUnspecified() {
		hosts = append(hosts, bind)
	}
	cert, key, err := ca.Issue(hosts...)
	if err != nil {
		return nil, err
	}
	n.TLS = &mariadb.TLS{CA: ca.PEM, Cert: cert, Key: key}
	return n, nil
}

// APITLS is the TLS configuration of the API over TCP on addr: the
// certificate and key files given, or else, for an address that is not
// loopback, one the root's CA issues for the listen address, the
// advertised host and names (e.g. a Kubernetes Service's DNS name);
// clients trust <root>/tls/ca.pem. Nil: plain HTTP, allowed on loopback,
// and elsewhere only with insecure.
func APITLS(root *rootdir.Root, addr, certFile, keyFile, advertise string, names []string, insecure bool) (*tls.Config, error) {
	if (certFile == "") != (keyFile == "") {
		return nil, errors.New("--tls-cert and --tls-key go together: give both, or neither (the root's CA then issues the API's certificate)")
	}
	if certFile != "" {
		pair, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("load --tls-cert/--tls-key: %w", err)
		}
		return &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}, nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("listen %q: %w: use HOST:PORT, e.g. 127.0.0.1:7878", addr, err)
	}
	if pool.IsLoopback(host) {
		return nil, nil
	}
	if insecure {
		return nil, nil
	}
	var hosts []string
	if advertise != "" {
		hosts = append(hosts, advertise)
	}
	hosts = append(hosts, names...)
	if ip := net.ParseIP(host); ip == nil || !ip.IsUnspecified() {
		if host != advertise {
			hosts = append(hosts, host)
		}
	}
	if len(hosts) == 0 {
		return nil, fmt.Errorf("--listen %s on every interface: name the host clients reach it at with --advertise HOST (its certificate names it), or give --tls-cert/--tls-key", addr)
	}
	ca, err := tlsca.Load(root.Path)
	if err != nil {
		return nil, err
	}
	return ca.ServerConfig(hosts...)
}

// GroupHeader names a request's holder group, for a caller the token does
// not place in one (the unix socket, or the root's own token).
const GroupHeader = "Pristine-Group"

// DefaultGroup is the group of a request that names none.
const DefaultGroup = "default"

type groupKey struct{}

// LoadGroupTokens reads a file of "GROUP TOKEN" lines (# comments and
// blank lines skipped); each token places its holder in its group, which
// no header can change.
func LoadGroupTokens(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read --group-tokens: %w", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("--group-tokens %s has mode %v: others may read the tokens; chmod 600 it", path, st.Mode().Perm())
	}
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fs := strings.Fields(line)
		if len(fs) != 2 || len(fs[1]) < 32 {
			return nil, fmt.Errorf("--group-tokens %s line %d: want GROUP TOKEN, a token of at least 32 characters (e.g. openssl rand -hex 24)", path, n)
		}
		if _, dup := out[fs[1]]; dup {
			return nil, fmt.Errorf("--group-tokens %s line %d: a token given twice", path, n)
		}
		out[fs[1]] = fs[0]
	}
	return out, sc.Err()
}

// withGroup marks a request as coming from a group token's holder.
func withGroup(r *http.Request, group string) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), groupKey{}, group))
}

// groupOf is the holder group of a request: the group of its token, when
// it came with a group token (a header naming another group is refused,
// so a runner cannot leave its group); else the header's; else
// DefaultGroup.
func groupOf(r *http.Request) (string, error) {
	h := strings.TrimSpace(r.Header.Get(GroupHeader))
	if g, ok := r.Context().Value(groupKey{}).(string); ok {
		if h != "" && h != g {
			return "", fmt.Errorf("%w: the token is group %s's, and %s: %s names another group; drop the header", errForbidden, g, GroupHeader, h)
		}
		return g, nil
	}
	if h == "" {
		return DefaultGroup, nil
	}
	if len(h) > 64 || strings.ContainsAny(h, " \t\"\\") {
		return "", fmt.Errorf("%w: %s: %q: at most 64 characters, no spaces or quotes", errBadRequest, GroupHeader, h)
	}
	return h, nil
}

// errOverCap answers a lease request of a group at its cap (429).
var errOverCap = errors.New("over the group's lease cap")

// reserveGroup admits one more lease request of group, or fails naming
// the cap: the group's leases held plus its requests in progress stay
// within MaxLeasesPerGroup. release undoes the reservation once the
// request has its lease (then counted as held) or failed.
func (s *Server) reserveGroup(group string) (release func(), err error) {
	if s.MaxLeasesPerGroup <= 0 {
		return func() {}, nil
	}
	s.groupMu.Lock()
	defer s.groupMu.Unlock()
	held := 0
	for _, n := range s.poolNames() {
		if p, err := s.pool(n); err == nil {
			for _, l := range p.Leases() {
				if l.Group == group {
					held++
				}
			}
		}
	}
	if s.groupPending == nil {
		s.groupPending = map[string]int{}
	}
	if held+s.groupPending[group] >= s.MaxLeasesPerGroup {
		return nil, fmt.Errorf("%w: group %s holds %d leases (with %d requests in progress) and the daemon's cap is %d per group (serve --max-leases-per-group %d): release one first", errOverCap, group, held, s.groupPending[group], s.MaxLeasesPerGroup, s.MaxLeasesPerGroup)
	}
	s.groupPending[group]++
	var once sync.Once
	return func() {
		once.Do(func() {
			s.groupMu.Lock()
			s.groupPending[group]--
			s.groupMu.Unlock()
		})
	}, nil
}

// remotePeer tells whether a request came over TCP from another host: its
// holder's PID means nothing here (no process of this host to watch), so
// only the TTL, renewed by the client (POST /v1/leases/{id}/extend),
// reclaims its leases.
func remotePeer(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return false // the unix socket: RemoteAddr is "@" or empty
	}
	ip := net.ParseIP(host)
	return ip != nil && !ip.IsLoopback()
}

// tokenGroup is the group of a request's group token, if it came with one.
func tokenGroup(r *http.Request) (string, bool) {
	g, ok := r.Context().Value(groupKey{}).(string)
	return g, ok
}

// ownGroup refuses a group token's holder a lease of another group: a
// runner sees, extends, keeps and releases its own leases only.
func ownGroup(r *http.Request, p *pool.Pool, id string) error {
	g, ok := tokenGroup(r)
	if !ok {
		return nil
	}
	if l, found := p.Get(id); found && l.Group != g {
		return fmt.Errorf("%w %q: it is not a lease of group %s", pool.ErrUnknownLease, id, g)
	}
	return nil
}
