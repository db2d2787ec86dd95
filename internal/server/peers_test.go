package server_test

// The attacker's tests of docs/security.md, "The API survives hostile
// peers": peers without the token hold idle connections, send bodies
// byte by byte, fail TLS handshakes and open more connections than the
// daemon has files; the operator's unix socket answers throughout.

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pristinedb/pristine/internal/server"
	"github.com/pristinedb/pristine/internal/tlsca"
)

// closedWithin reports whether the server closes c (a read ends with EOF
// or a reset) within d, reading and dropping what it sends meanwhile.
func closedWithin(c net.Conn, d time.Duration) (bool, error) {
	c.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false, err
	}
	return true, err
}

// unixGet sends GET path to the daemon's unix socket.
func unixGet(ctx context.Context, sock, path string) (string, error) {
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://pristine"+path, nil)
	resp, err := hc.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// refusedCount reads pristine_api_refused_total{reason} from metrics.
func refusedCount(t *testing.T, metrics, reason string) int {
	t.Helper()
	m := regexp.MustCompile(`(?m)^pristine_api_refused_total\{reason="` + reason + `"\} (\d+)`).FindStringSubmatch(metrics)
	if m == nil {
		t.Fatalf("/metrics has no pristine_api_refused_total{reason=%q}", reason)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// TestAPISurvivesHostilePeers: against a daemon whose open-file limit is
// lowered to about 150 free files, a peer without the token
//   - that sends a request is answered 401 and its connection closed;
//   - that fails the TLS handshake is counted;
//   - that opens 320 idle connections from 8 addresses (more than the
//     daemon has files) holds no more than the daemon's caps: the
//     operator's unix socket still answers, and the refusals are counted;
//
// and once it is gone, a client with the token is served over TCP again.
func TestAPISurvivesHostilePeers(t *testing.T) {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	fds, _ := os.ReadDir("/proc/self/fd")
	low := lim
	low.Cur = uint64(len(fds)) + 150
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Setrlimit(unix.RLIMIT_NOFILE, &lim) })

	ca, err := tlsca.Load(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// Long timeouts: what closes a connection here is a guard, not them.
	d := newDaemon(t, func(s *server.Server) {
		if s.TLS, err = ca.ServerConfig("127.0.0.1"); err != nil {
			t.Fatal(err)
		}
		s.Timeouts = server.Timeouts{Header: time.Minute, Idle: time.Minute}
	})
	addr := strings.TrimPrefix(d.base, "http://")
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.PEM)
	tlsConf := &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sock := server.SocketPath(d.cat.Root())

	t.Run("401 closes the connection", func(t *testing.T) {
		c, err := tls.Dial("tcp", addr, tlsConf)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "GET /v1/pools HTTP/1.1\r\nHost: pristine\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("a request without the token got %d, want 401", resp.StatusCode)
		}
		if closed, err := closedWithin(c, 10*time.Second); !closed {
			t.Fatalf("the daemon kept the connection of a peer it answered 401 (%v)", err)
		}
	})

	t.Run("a failed TLS handshake is counted", func(t *testing.T) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: pristine\r\n\r\n") // plain HTTP to HTTPS
		closedWithin(c, 10*time.Second)
		c.Close()
	})

	// The attacker is another process (its files are its own): it dials
	// 40 connections from each of 127.0.0.2-9 and holds them.
	cmd := exec.Command(os.Args[0], "-test.run=^TestHostilePeerHelper$")
	cmd.Env = append(os.Environ(), "PRISTINE_TEST_ATTACK="+addr)
	cmd.Stderr = os.Stderr
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer stdin.Close()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if !strings.HasPrefix(line, "holding") {
		t.Fatalf("the attacker did not get going: %q %v", line, err)
	}
	t.Logf("attacker: %s", strings.TrimSpace(line))

	if _, err := unixGet(ctx, sock, "/v1/health"); err != nil {
		t.Fatalf("the operator's unix socket does not answer while peers hold the TCP port: %v", err)
	}
	metrics, err := unixGet(ctx, sock, "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	for _, reason := range []string{"unauthorized", "tls_handshake"} {
		if refusedCount(t, metrics, reason) < 1 {
			t.Errorf("pristine_api_refused_total{reason=%q} is 0 after such a peer", reason)
		}
	}
	if n := refusedCount(t, metrics, "address_cap") + refusedCount(t, metrics, "connection_cap"); n < 320-150 {
		t.Errorf("the daemon refused %d of the attacker's 320 connections, want at least %d (it has about 150 files)", n, 320-150)
	}

	stdin.Close() // the attacker lets go
	cmd.Wait()
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConf}}
	for {
		req, _ := http.NewRequestWithContext(ctx, "GET", "https://"+addr+"/v1/health", nil)
		req.Header.Set("Authorization", "Bearer "+d.token)
		resp, err := hc.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("a client with the token is not served once the attacker is gone: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestHostilePeerHelper is the attacker process of
// TestAPISurvivesHostilePeers.
func TestHostilePeerHelper(t *testing.T) {
	addr := os.Getenv("PRISTINE_TEST_ATTACK")
	if addr == "" {
		t.Skip("the attacker of TestAPISurvivesHostilePeers, run by it")
	}
	var lim unix.Rlimit
	unix.Getrlimit(unix.RLIMIT_NOFILE, &lim)
	lim.Cur = lim.Max
	unix.Setrlimit(unix.RLIMIT_NOFILE, &lim)
	var held []net.Conn
	for i := 2; i <= 9; i++ {
		dialer := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(i))}, Timeout: 5 * time.Second}
		for range 40 {
			c, err := dialer.Dial("tcp", addr)
			if err != nil {
				continue // a full backlog
			}
			held = append(held, c)
		}
	}
	fmt.Printf("holding %d connections\n", len(held))
	io.Copy(io.Discard, os.Stdin)
}

// TestAPIClosesIdleConnections: with the timeouts short, the daemon
// closes a connection that sends nothing, one idle after its request,
// and one that sends its body byte by byte, while a lease request that
// waits longer than every timeout is still answered.
func TestAPIClosesIdleConnections(t *testing.T) {
	short := 300 * time.Millisecond
	d := newDaemon(t, func(s *server.Server) {
		s.Timeouts = server.Timeouts{Header: short, Body: short, Write: short, Idle: short}
	})
	addr := strings.TrimPrefix(d.base, "http://")
	dial := func(t *testing.T) net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	t.Run("silent", func(t *testing.T) {
		if closed, err := closedWithin(dial(t), 20*time.Second); !closed {
			t.Fatalf("a connection that sends nothing is kept (%v)", err)
		}
	})
	t.Run("idle after a request", func(t *testing.T) {
		c := dial(t)
		fmt.Fprintf(c, "GET /v1/health HTTP/1.1\r\nHost: pristine\r\nAuthorization: Bearer %s\r\n\r\n", d.token)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("health: %v %v", resp, err)
		}
		if closed, err := closedWithin(c, 20*time.Second); !closed {
			t.Fatalf("a kept-alive connection that goes idle is kept (%v)", err)
		}
	})
	t.Run("a body byte by byte", func(t *testing.T) {
		c := dial(t)
		fmt.Fprintf(c, "POST /v1/leases HTTP/1.1\r\nHost: pristine\r\nAuthorization: Bearer %s\r\nContent-Length: 100\r\n\r\n{", d.token)
		if closed, err := closedWithin(c, 20*time.Second); !closed {
			t.Fatalf("a connection whose body stalls is kept (%v)", err)
		}
	})
	t.Run("a long lease wait is answered", func(t *testing.T) {
		d.buildFromSQL("app", "CREATE TABLE t (id INT PRIMARY KEY);")
		d.poolUp("app", 1)
		if _, err := d.c.Lease(context.Background(), server.LeaseRequest{Template: "app"}); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		var answer server.ErrorBody
		code := d.do("POST", "/v1/leases", `{"template":"app","wait_seconds":1.5}`, &answer)
		if took := time.Since(start); code != http.StatusServiceUnavailable || took < 1500*time.Millisecond {
			t.Fatalf("a lease request waiting 1.5 s for the only slot got %d after %s (%s), want 503 after 1.5 s", code, took, answer.Error)
		}
	})
}

// TestConnCaps: the default caps on the API's TCP connections follow the
// open-file limit and leave most of it to the rest of the daemon.
func TestConnCaps(t *testing.T) {
	for _, tc := range []struct {
		nofile            uint64
		total, perAddress int
	}{
		{20, 16, 4},
		{1024, 256, 64},
		{20000, 5000, 1250},
		{1 << 20, 16384, 4096},
	} {
		if total, per := server.ConnCaps(tc.nofile); total != tc.total || per != tc.perAddress {
			t.Errorf("ConnCaps(%d) = %d, %d; want %d, %d", tc.nofile, total, per, tc.total, tc.perAddress)
		}
	}
}
