package e2e

import (
	"bufio"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestDashboardCommand: with the daemon `pool up` started (unix socket
// only), `pristine dashboard` prints a one-time URL that opens the
// dashboard and the API in a browser, once.
func TestDashboardCommand(t *testing.T) {
	e := newEnv(t)
	in := filepath.Join(t.TempDir(), "s.sql")
	os.WriteFile(in, []byte(schema), 0o644)
	e.must("template", "build", "app", "--from-sql", in)
	e.must("pool", "up", "--template", "app", "--size", "1")

	cmd := exec.Command(bin, "--root", e.root, "dashboard")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGINT)
		if err := cmd.Wait(); err != nil {
			t.Errorf("pristine dashboard after Ctrl-C: %v", err)
		}
	}()
	url, err := bufio.NewReader(out).ReadString('\n')
	url = strings.TrimSpace(url)
	if err != nil || !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.Contains(url, "/?login=") {
		t.Fatalf("pristine dashboard printed %q (%v), want a loopback URL with a one-time login", url, err)
	}
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}
	for _, tc := range []struct{ url, want string }{{url, "text/html"}, {strings.Split(url, "?")[0] + "v1/pools", "application/json"}} {
		resp, err := browser.Get(tc.url)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(resp.Header.Get("Content-Type"), tc.want) {
			t.Fatalf("GET %s: %d %s, want 200 %s", tc.url, resp.StatusCode, resp.Header.Get("Content-Type"), tc.want)
		}
	}
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the one-time URL opened twice: %d, want 401", resp.StatusCode)
	}
}

// TestServeListenURL: serve --listen prints, on the line the clients' test
// helpers read (pristine: serving http://ADDR/...), a URL that opens the
// dashboard, not one that answers 401.
func TestServeListenURL(t *testing.T) {
	e := newEnv(t)
	cmd := exec.Command(bin, "serve", "--root", e.root, "--listen", "127.0.0.1:0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Signal(syscall.SIGINT); cmd.Wait() }()
	sc := bufio.NewScanner(stderr)
	var url string
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "pristine: serving http://"); ok {
			url = "http://" + strings.Fields(rest)[0]
			break
		}
	}
	go func() {
		for sc.Scan() {
		}
	}()
	if !strings.Contains(url, "/?login=") {
		t.Fatalf("serve --listen printed no one-time URL (got %q)", url)
	}
	jar, _ := cookiejar.New(nil)
	resp, err := (&http.Client{Jar: jar}).Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("the URL serve printed answered %d %s, want the dashboard", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
}
