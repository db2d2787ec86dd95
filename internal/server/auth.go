package server

import (
	"crypto/rand"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/pristinedb/pristine/internal/rootdir"
)

// TokenFile is where the daemon keeps its bearer token, readable by the
// root's owner only.
func TokenFile(root *rootdir.Root) string { return filepath.Join(root.Path, "token") }

// LoadToken reads the root's token, making one the first time.
func LoadToken(root *rootdir.Root) (string, error) {
	path := TokenFile(root)
	if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) >= 26 {
		return strings.TrimSpace(string(b)), nil
	}
	tok := rand.Text() // 128 bits; tokens written before (48 hex digits) still load
	if err := os.WriteFile(path, []byte(tok+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("write token %s: %w", path, err)
	}
	return tok, nil
}

// ListenTCP listens on addr, refusing addresses that are not loopback
// unless allowRemote.
func ListenTCP(addr string, allowRemote bool) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("listen %q: %w: use HOST:PORT, e.g. 127.0.0.1:7878", addr, err)
	}
	ip := net.ParseIP(host)
	if !allowRemote && (ip == nil || !ip.IsLoopback()) && host != "localhost" {
		return nil, errors.New("listen " + addr + ": not a loopback address: pristine serves loopback only unless you pass --allow-remote")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	return ln, nil
}

const tokenCookie = "pristine_token"

// requireToken lets through requests that carry the token as a bearer
// header or a cookie; a browser opening /?token=T gets the cookie.
func (s *Server) requireToken(next http.Handler) http.Handler {
	want := []byte(s.Token)
	ok := func(got string) bool { return subtle.ConstantTimeCompare([]byte(got), want) == 1 }
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if code := r.URL.Query().Get("login"); r.URL.Path == "/" && code != "" && s.useLogin(code) {
			http.SetCookie(w, &http.Cookie{Name: tokenCookie, Value: s.Token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
			http.Redirect(w, r, "/", http.StatusSeeOther)
			return
		}
		if t := r.URL.Query().Get("token"); r.URL.Path == "/" && t != "" && ok(t) {
			http.SetCookie(w, &http.Cookie{Name: tokenCookie, Value: t, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
			http.Redirect(w, r, "/", http.StatusSeeOther)
			return
		}
		if h, found := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); found && ok(h) {
			next.ServeHTTP(w, r)
			return
		} else if found {
			if g, isGroup := s.groupToken(h); isGroup {
				if !groupMayCall(r) {
					writeJSON(w, http.StatusForbidden, ErrorBody{Error: "a group token (group " + g + ") may lease, release and build, not stop the daemon: ask the node's operator"})
					return
				}
				next.ServeHTTP(w, withGroup(r, g))
				return
			}
		}
		if c, err := r.Cookie(tokenCookie); err == nil && ok(c.Value) {
			next.ServeHTTP(w, r)
			return
		}
		// A peer without the token keeps no connection: it is closed
		// after this answer, and the refusal counted and logged quietly.
		s.refused(refusedUnauthorized, r.RemoteAddr, r.Method+" "+r.URL.Path)
		w.Header().Set("Connection", "close")
		w.Header().Set("WWW-Authenticate", `Bearer realm="pristine"`)
		writeJSON(w, http.StatusUnauthorized, ErrorBody{Error: "missing or wrong token: send Authorization: Bearer TOKEN (the token is in " + TokenFile(s.root) + " on the daemon's host), or open the one-time URL `pristine dashboard` prints"})
	})
}

// groupToken finds the group of a --group-tokens token, in constant time
// per token.
func (s *Server) groupToken(got string) (string, bool) {
	group, found := "", false
	for tok, g := range s.GroupTokens {
		if subtle.ConstantTimeCompare([]byte(got), []byte(tok)) == 1 {
			group, found = g, true
		}
	}
	return group, found
}

// groupMayCall tells whether a group token's holder (a runner) may make
// request r: everything but stopping the daemon. What it may change of
// the node's templates and pools, the handlers decide (tenants.go): only
// what its group built.
func groupMayCall(r *http.Request) bool {
	return r.URL.Path != "/v1/shutdown"
}
