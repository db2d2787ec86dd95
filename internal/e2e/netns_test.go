package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"golang.org/x/sys/unix"

	"github.com/pristinedb/pristine/api"
	"github.com/pristinedb/pristine/client"
	"github.com/pristinedb/pristine/internal/rootdir"
	"github.com/pristinedb/pristine/internal/tlsca"
)

// The pool node on a network, tested with two machines made of network
// namespaces (docs/fleet.md, "A pool node on the network"; docs/security.md,
// "Network"). The test makes them itself: "pool", "runner" and "other",
// joined by veth pairs made inside them (no interface of the host is
// touched), with addresses from 192.0.2.0/24 (TEST-NET-1):
//
//	runner 192.0.2.2/30 --- 192.0.2.1/30 pool 192.0.2.5/30 --- 192.0.2.6/30 other
//
// The daemon and its slots run in pool (entered with nsenter); the runner's
// clients are processes started in runner, or this test's own connections,
// each opened by a thread that entered runner's namespace (a socket keeps
// the namespace it was made in).
const (
	poolAddr   = "192.0.2.1"
	runnerAddr = "192.0.2.2"
	apiPort    = "7878"
)

// inNetns runs a program in network namespace ns, entering only that
// namespace (nsenter --net). ip netns exec would also make a mount
// namespace, a copy of every mount of the moment: where mounts are
// private, that copy keeps the filesystems of tests running beside this
// one (their scratch filesystems) mounted until the program exits.
func inNetns(ns, name string, args ...string) *exec.Cmd {
	return exec.Command("nsenter", append([]string{"--net=/run/netns/" + ns, "--", name}, args...)...)
}

// netnsSet is the test's three namespaces.
type netnsSet struct{ pool, runner, other string }

func newNetns(t *testing.T) netnsSet {
	t.Helper()
	sfx := fmt.Sprint(os.Getpid() % 100000)
	n := netnsSet{pool: "pristine-pool-" + sfx, runner: "pristine-runner-" + sfx, other: "pristine-other-" + sfx}
	ip := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	t.Cleanup(func() {
		for _, ns := range []string{n.pool, n.runner, n.other} {
			exec.Command("ip", "netns", "del", ns).Run() // its veth ends go with it
		}
	})
	// A root that may not make network namespaces (an unprivileged
	// container) cannot run the test: say so and skip.
	if out, err := exec.Command("ip", "netns", "add", n.pool).CombinedOutput(); err != nil {
		t.Skipf("cannot make a network namespace here (ip netns add: %v: %s): the network-namespace test needs CAP_SYS_ADMIN and /run/netns", err, strings.TrimSpace(string(out)))
	}
	ip("netns", "add", n.runner)
	ip("netns", "add", n.other)
	for _, ns := range []string{n.pool, n.runner, n.other} {
		ip("-n", ns, "link", "set", "lo", "up")
	}
	ip("-n", n.pool, "link", "add", "to-runner", "type", "veth", "peer", "name", "to-pool", "netns", n.runner)
	ip("-n", n.pool, "link", "add", "to-other", "type", "veth", "peer", "name", "to-pool", "netns", n.other)
	ip("-n", n.pool, "addr", "add", poolAddr+"/30", "dev", "to-runner")
	ip("-n", n.runner, "addr", "add", runnerAddr+"/30", "dev", "to-pool")
	ip("-n", n.pool, "addr", "add", "192.0.2.5/30", "dev", "to-other")
	ip("-n", n.other, "addr", "add", "192.0.2.6/30", "dev", "to-pool")
	for _, l := range [][2]string{{n.pool, "to-runner"}, {n.pool, "to-other"}, {n.runner, "to-pool"}, {n.other, "to-pool"}} {
		ip("-n", l[0], "link", "set", l[1], "up")
	}
	ip("-n", n.other, "route", "add", "192.0.2.0/30", "via", "192.0.2.5")
	return n
}

// dialIn returns a dialer whose connections are made in namespace ns: a
// goroutine locked to its thread enters ns and dials; the thread is never
// unlocked, so it ends with the goroutine and no other code runs in ns.
func dialIn(ns string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		type result struct {
			c   net.Conn
			err error
		}
		ch := make(chan result, 1)
		go func() {
			runtime.LockOSThread()
			f, err := os.Open("/run/netns/" + ns)
			if err != nil {
				ch <- result{nil, err}
				return
			}
			defer f.Close()
			if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
				ch <- result{nil, fmt.Errorf("enter network namespace %s: %w", ns, err)}
				return
			}
			var d net.Dialer
			c, err := d.DialContext(ctx, "tcp", addr)
			ch <- result{c, err}
		}()
		r := <-ch
		return r.c, r.err
	}
}

var registerDials sync.Once

// syncBuffer is a bytes.Buffer safe for a process's output and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestNetworkNamespaces: a pool node serves a runner on another
// "machine". In the runner's namespace a lease connects with TLS and a
// verified certificate; a client without the CA, expecting another host
// name, or without TLS is refused, and so is the admin account with the
// admin secret. From a third namespace without a lease the API answers
// nothing without a token and the slot refuses the admin and wrong
// credentials. A runner over its group's cap gets 429 naming it; a
// runner group neither gets nor removes another's template. A
// runner process that is killed has its lease reclaimed by its TTL (the
// daemon ignores a remote holder's PID; a live holder renews). The Go
// example's tests pass from the runner namespace against the pool.
func TestNetworkNamespaces(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the network-namespace test needs root: it makes network namespaces and veth pairs (ip netns)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("the network-namespace test needs ip (apt-get install iproute2; scripts/install-deps.sh installs it)")
	}
	e := newEnv(t)
	ns := newNetns(t)
	repo, _ := filepath.Abs("../..")
	tokA, tokB := strings.Repeat("a1", 20), strings.Repeat("b2", 20)
	tokens := filepath.Join(t.TempDir(), "tokens")
	os.WriteFile(tokens, []byte("runner-a "+tokA+"\nrunner-b "+tokB+"\n"), 0o600)

	serveLog := &syncBuffer{}
	serve := inNetns(ns.pool, bin, "serve", "--root", e.root,
		"--listen", poolAddr+":"+apiPort, "--allow-remote", "--slot-address", poolAddr, "--advertise", poolAddr,
		"--max-leases-per-group", "2", "--group-tokens", tokens)
	serve.Stdout, serve.Stderr = serveLog, serveLog
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		serve.Process.Signal(syscall.SIGTERM)
		serve.Wait()
		if t.Failed() {
			t.Logf("serve's log:\n%s", serveLog.String())
		}
	})
	local := client.New(filepath.Join(e.root, "pristine.sock"))
	for i := 0; ; i++ {
		if err := local.Health(context.Background()); err == nil {
			break
		} else if i == 300 {
			t.Fatalf("the daemon in namespace pool did not start: %v\n%s", err, serveLog.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	in := filepath.Join(t.TempDir(), "s.sql")
	os.WriteFile(in, []byte(schema), 0o644)
	e.must("template", "build", "app", "--from-sql", in)
	e.must("pool", "up", "--template", "app", "--size", "3")
	caFile := tlsca.CertFile(e.root)
	caPEM, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(tlsca.KeyFile(e.root)); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("the root's CA key: %v %v, want mode 0600", st, err)
	}

	// The runner's HTTP client: TLS verified against the root's CA.
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	httpIn := func(nsName string, rootCAs *x509.CertPool) *http.Client {
		return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DialContext: dialIn(nsName),
			TLSClientConfig: &tls.Config{RootCAs: rootCAs}}}
	}
	runnerHTTP := httpIn(ns.runner, roots)
	base := "https://" + poolAddr + ":" + apiPort
	call := func(hc *http.Client, url, token, method, path, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, url+path, strings.NewReader(body))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	leaseReq := `{"template":"app","ttl_seconds":120,"wait_seconds":10,"pid":1}`
	takeLease := func(token string) api.Lease {
		t.Helper()
		code, body := call(runnerHTTP, base, token, "POST", "/v1/leases", leaseReq)
		if code != 200 {
			t.Fatalf("lease from the runner: %d %s", code, body)
		}
		var l api.Lease
		if err := json.Unmarshal([]byte(body), &l); err != nil {
			t.Fatal(err)
		}
		return l
	}

	// A lease over the network, and a verified TLS connection to it.
	l := takeLease(tokA)
	if l.Host != poolAddr || !strings.Contains(l.CA, "BEGIN CERTIFICATE") || l.Group != "runner-a" || l.PID != 0 {
		t.Fatalf("the runner's lease: host %s, group %q, pid %d (a remote holder's PID is ignored), CA %.40q", l.Host, l.Group, l.PID, l.CA)
	}
	if l.CA != string(caPEM) {
		t.Errorf("the lease's CA is not the root's ca.pem")
	}
	registerDials.Do(func() {
		mysql.RegisterDialContext("runner", func(ctx context.Context, addr string) (net.Conn, error) {
			return dialIn(ns.runner)(ctx, "tcp", addr)
		})
		mysql.RegisterDialContext("other", func(ctx context.Context, addr string) (net.Conn, error) {
			return dialIn(ns.other)(ctx, "tcp", addr)
		})
	})
	if err := client.RegisterLeaseTLS(&l); err != nil {
		t.Fatal(err)
	}
	wrongHost, _ := tlsca.ClientConfig(caPEM, "pool.example")
	mysql.RegisterTLSConfig("netns-wrong-host", wrongHost)
	connect := func(from, user, password, tlsName string) (string, error) {
		c, err := mysql.ParseDSN(l.DSN)
		if err != nil {
			t.Fatal(err)
		}
		c.Net, c.User, c.Passwd, c.TLSConfig, c.Timeout = from, user, password, tlsName, 10*time.Second
		if tlsName != "" {
			c.DBName = l.Database
		}
		db, err := sql.Open("mysql", c.FormatDSN())
		if err != nil {
			return "", err
		}
		defer db.Close()
		var v, k, cipher string
		if err := db.QueryRow("SELECT CONCAT(COUNT(*), ':', MAX(v)) FROM " + l.Database + ".canary").Scan(&v); err != nil {
			return "", err
		}
		if err := db.QueryRow("SHOW SESSION STATUS LIKE 'Ssl_cipher'").Scan(&k, &cipher); err != nil {
			return "", err
		}
		return v + " over " + cipher, nil
	}
	tlsName := api.TLSConfigName(l.CA, l.Host)
	if !strings.Contains(l.DSN, "tls="+tlsName) {
		t.Fatalf("the lease's DSN %q does not name its TLS configuration %s", l.DSN, tlsName)
	}
	if got, err := connect("runner", l.User, l.Password.Value(), tlsName); err != nil || !strings.HasPrefix(got, "1:pristine over ") || strings.HasSuffix(got, "over ") {
		t.Fatalf("the runner's verified TLS connection: %q %v", got, err)
	}
	root, err := rootdir.Open(e.root)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := root.AdminSecret()
	if err != nil {
		t.Fatal(err)
	}
	// A TCP connection without TLS is refused by require_secure_transport:
	// MariaDB 10.11 answers it with "Access denied", MariaDB 11 and MySQL
	// name the setting (error 3159).
	const noTLS = "Access denied|insecure transport are prohibited"
	for _, c := range []struct{ what, from, user, password, tls, want string }{
		{"the lease without the CA (system roots)", "runner", l.User, l.Password.Value(), "true", "certificate signed by unknown authority"},
		{"the lease expecting another host name", "runner", l.User, l.Password.Value(), "netns-wrong-host", "pool.example"},
		{"the lease without TLS", "runner", l.User, l.Password.Value(), "", noTLS},
		{"the admin account with the admin secret", "runner", "root", admin, tlsName, "Access denied"},
		{"the admin account from a namespace without a lease", "other", "root", admin, tlsName, "Access denied"},
		{"a wrong password from a namespace without a lease", "other", l.User, "guess", tlsName, "Access denied"},
		{"no TLS from a namespace without a lease", "other", "root", admin, "", noTLS},
	} {
		got, err := connect(c.from, c.user, c.password, c.tls)
		refused := false
		for _, want := range strings.Split(c.want, "|") {
			refused = refused || err != nil && strings.Contains(err.Error(), want)
		}
		if !refused {
			t.Errorf("%s: %q %v, want refused (%s)", c.what, got, err, c.want)
		}
	}
	// The refusals are the server's: the other namespace does reach the
	// slot, and the lease's own credentials work from anywhere (a lease is
	// a bearer credential; docs/security.md).
	if got, err := connect("other", l.User, l.Password.Value(), tlsName); err != nil || !strings.HasPrefix(got, "1:pristine") {
		t.Errorf("the lease's credentials from the other namespace: %q %v", got, err)
	}
	// The API from the other namespace: nothing without the token, nor
	// over plain HTTP.
	otherHTTP := httpIn(ns.other, roots)
	if code, body := call(otherHTTP, base, "", "GET", "/v1/leases/"+l.ID, ""); code != http.StatusUnauthorized || strings.Contains(body, l.Password.Value()) {
		t.Errorf("the API without a token from the other namespace: %d %s, want 401", code, body)
	}
	if code, body := call(otherHTTP, "http://"+poolAddr+":"+apiPort, tokA, "GET", "/v1/leases", ""); code == 200 {
		t.Errorf("the API over plain HTTP: %d %s, want no answer", code, body)
	}
	if code, body := call(httpIn(ns.runner, x509.NewCertPool()), base, tokA, "GET", "/v1/leases", ""); code != 0 || !strings.Contains(body, "certificate") {
		t.Errorf("the API to a client that does not trust the root's CA: %d %s, want a certificate error", code, body)
	}

	// The cap: runner-a holds 2 at most; runner-b is another group.
	l2 := takeLease(tokA)
	if code, body := call(runnerHTTP, base, tokA, "POST", "/v1/leases", leaseReq); code != http.StatusTooManyRequests || !strings.Contains(body, "--max-leases-per-group 2") {
		t.Errorf("runner-a's third lease: %d %s, want 429 naming the cap", code, body)
	}
	for _, id := range []string{l.ID, l2.ID} {
		if code, body := call(runnerHTTP, base, tokA, "DELETE", "/v1/leases/"+id, ""); code != 200 {
			t.Errorf("release %s: %d %s", id, code, body)
		}
	}

	// Two groups on the node are tenants (docs/security.md, "Runner groups
	// on a shared node"): runner-b builds under a key, runner-a naming it
	// gets a build of its own; runner-a cannot remove runner-b's template
	// or the operator's, nor lift a slot's disk cap.
	begin := func(token string) api.TemplateAnswer {
		t.Helper()
		code, body := call(runnerHTTP, base, token, "POST", "/v1/templates", `{"name":"victim","key":"sha256:victim-migrations-v1"}`)
		var a api.TemplateAnswer
		if err := json.Unmarshal([]byte(body), &a); err != nil || code != http.StatusCreated {
			t.Fatalf("a build from the runner: %d %s", code, body)
		}
		return a
	}
	b := begin(tokB)
	if code, body := call(runnerHTTP, base, tokB, "PUT", "/v1/templates/"+b.Hash, ""); code != 200 {
		t.Fatalf("runner-b's finish: %d %s", code, body)
	}
	if a := begin(tokA); a.Hash == b.Hash {
		t.Errorf("runner-a naming runner-b's key was handed runner-b's build %s", b.Hash)
	} else if code, body := call(runnerHTTP, base, tokA, "DELETE", "/v1/templates/"+a.Hash, ""); code != 200 {
		t.Errorf("runner-a aborting its own build: %d %s", code, body)
	}
	for _, c := range []struct {
		what, method, path, body string
		want                     int
	}{
		{"removing runner-b's template", "DELETE", "/v1/templates/" + b.Hash, "", http.StatusNotFound},
		{"removing the operator's template", "DELETE", "/v1/templates/app", "", http.StatusForbidden},
		{"a pool with no disk cap", "POST", "/v1/pools", `{"template":"victim","size":1,"slot_disk":-1}`, http.StatusForbidden},
	} {
		if code, body := call(runnerHTTP, base, tokA, c.method, c.path, c.body); code != c.want {
			t.Errorf("runner-a %s: %d %s, want %d", c.what, code, body, c.want)
		}
	}

	// A runner process killed while it holds a lease: the daemon cannot
	// watch it, so its TTL (3 s, renewed while it lives) reclaims it.
	holderBin := prebuilt(t, "PRISTINE_TEST_NETHOLDER", repo, "build", "./internal/e2e/testdata/netholder")
	runnerEnv := append(os.Environ(), "PRISTINE_URL="+base, "PRISTINE_CA_FILE="+caFile, "PRISTINE_ROOT=/nonexistent")
	holder := inNetns(ns.runner, holderBin, "3s")
	holder.Dir = repo
	holder.Env = append(runnerEnv, "PRISTINE_TOKEN="+tokA)
	holderErr := &syncBuffer{}
	holder.Stderr = holderErr
	out, _ := holder.StdoutPipe()
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer holder.Process.Kill()
	id, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		holder.Wait()
		t.Fatalf("netholder: %v\n%s", err, holderErr.String())
	}
	id = strings.TrimSpace(id)
	held := func() (int, string) {
		return call(runnerHTTP, base, tokA, "GET", "/v1/leases/"+id, "")
	}
	time.Sleep(5 * time.Second) // beyond its TTL: renewed
	if code, body := held(); code != 200 {
		t.Fatalf("a live remote holder's lease after twice its TTL: %d %s, want held (renewed)\n%s", code, body, holderErr.String())
	}
	holder.Process.Kill()
	holder.Wait()
	deadline := time.Now().Add(20 * time.Second)
	for {
		code, body := held()
		if code == http.StatusGone && strings.Contains(body, "expired") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the killed runner's lease 20 s later: %d %s, want 410 (expired)", code, body)
		}
		time.Sleep(250 * time.Millisecond)
	}

	// The Go example: built and pooled on the pool node (its migrations run
	// against a template server there), then its tests run in the runner.
	exTest := prebuilt(t, "PRISTINE_TEST_GO_EXAMPLE", repo, "test", "-c", "./examples/go")
	runExample := func(nsName string, env []string) string {
		t.Helper()
		cmd := inNetns(nsName, exTest, "-test.v", "-test.count=1")
		cmd.Dir, cmd.Env = filepath.Join(repo, "examples/go"), env
		out, err := cmd.CombinedOutput()
		if err != nil || strings.Contains(string(out), "--- SKIP") || !strings.Contains(string(out), "PASS") {
			t.Fatalf("the Go example's tests in namespace %s: %v\n%s", nsName, err, out)
		}
		return string(out)
	}
	runExample(ns.pool, append(os.Environ(), "PRISTINE_ROOT="+e.root, "PRISTINE_URL="))
	got := runExample(ns.runner, append(runnerEnv, "PRISTINE_TOKEN="+tokB))
	t.Logf("the Go example's tests from the runner namespace:\n%s", got)
}

// prebuilt returns the program $envVar names, built already (the server
// matrix's roots have no Go: scripts/servers.sh builds it on the host), or
// builds it in repo with `go GOARGS... -o FILE` (the last of goArgs is the
// package).
func prebuilt(t *testing.T, envVar, repo string, goArgs ...string) string {
	t.Helper()
	if p := os.Getenv(envVar); p != "" {
		return p
	}
	out := filepath.Join(t.TempDir(), filepath.Base(goArgs[len(goArgs)-1])+".bin")
	args := append(append(goArgs[:len(goArgs)-1:len(goArgs)-1], "-o", out), goArgs[len(goArgs)-1])
	build := exec.Command("go", args...)
	build.Dir = repo
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, b)
	}
	return out
}
