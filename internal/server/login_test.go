package server_test

import (
	"net/http"
	"net/http/cookiejar"
	"strings"
	"testing"

	"github.com/pristinedb/pristine/internal/server"
)

// TestOneTimeLogin: the URL `serve --listen` prints opens the dashboard
// once; the code does not work a second time; a request without a cookie
// is told where the token is, by its literal path.
func TestOneTimeLogin(t *testing.T) {
	var srv *server.Server
	d := newDaemon(t, func(s *server.Server) { srv = s })
	code := srv.NewLogin()
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}
	resp, err := browser.Get(d.base + "/?login=" + code)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("the one-time URL answered %d %s, want the dashboard", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	resp, err = browser.Get(d.base + "/v1/pools")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the logged-in browser got %d from /v1/pools", resp.StatusCode)
	}
	resp, err = http.Get(d.base + "/?login=" + code)
	if err != nil {
		t.Fatal(err)
	}
	body := new(strings.Builder)
	buf := make([]byte, 4096)
	n, _ := resp.Body.Read(buf)
	body.Write(buf[:n])
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a spent login code answered %d, want 401", resp.StatusCode)
	}
	if strings.Contains(body.String(), "<root>") || !strings.Contains(body.String(), "/token") {
		t.Errorf("the 401 names no literal token path: %s", body)
	}
}
