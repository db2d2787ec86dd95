package server_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pristinedb/pristine/client"
	"github.com/pristinedb/pristine/internal/catalog"
	"github.com/pristinedb/pristine/internal/server"
	"github.com/pristinedb/pristine/internal/template"
	"github.com/pristinedb/pristine/internal/template/templatetest"
)

// daemon is an in-process daemon on a root in /dev/shm, serving its unix
// socket and a loopback TCP port with a token.
type daemon struct {
	t       *testing.T
	cat     *catalog.Catalog
	builder *template.Builder
	c       *client.Client
	base    string // http://127.0.0.1:PORT
	token   string
}

func newDaemon(t *testing.T, opts ...func(*server.Server)) *daemon {
	t.Helper()
	st := templatetest.NewBuilder(t, "auto")
	root := st.Catalog().Root()
	ln, err := server.Listen(root)
	if err != nil {
		t.Fatal(err)
	}
	tcp, err := server.ListenTCP("127.0.0.1:0", false)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(context.Background(), root, st, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if srv.Token, err = server.LoadToken(root); err != nil {
		t.Fatal(err)
	}
	for _, o := range opts {
		o(srv)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { srv.Serve(ctx, ln, tcp); close(done) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return &daemon{t: t, cat: st.Catalog(), builder: st, c: client.New(server.SocketPath(root)), base: "http://" + tcp.Addr().String(), token: srv.Token}
}

// do sends a request over TCP with the token and decodes the answer.
func (d *daemon) do(method, path, body string, out any) int {
	d.t.Helper()
	req, _ := http.NewRequest(method, d.base+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+d.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		d.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			d.t.Fatalf("%s %s: %v: %s", method, path, err, b)
		}
	}
	return resp.StatusCode
}

func (d *daemon) buildFromSQL(name, sqlText string) *catalog.Meta {
	d.t.Helper()
	return templatetest.Build(d.t, d.builder, name, sqlText, template.BuildOptions{})
}

func (d *daemon) poolUp(name string, size int) {
	d.t.Helper()
	if _, err := d.c.PoolUp(context.Background(), server.PoolRequest{Template: name, Size: size}, nil); err != nil {
		d.t.Fatal(err)
	}
}

func TestTemplateIsBuiltOnce(t *testing.T) {
	d := newDaemon(t)
	body := `{"name":"mig","key":"k-123"}`
	// Two workers race to build the same template: one builds, one waits.
	var wg sync.WaitGroup
	codes := make([]int, 2)
	answers := make([]server.TemplateAnswer, 2)
	for i := range codes {
		wg.Add(1)
		go func(i int) { defer wg.Done(); codes[i] = d.do("POST", "/v1/templates", body, &answers[i]) }(i)
	}
	wg.Wait()
	builder := 0
	if codes[1] == http.StatusCreated {
		builder = 1
	}
	if codes[builder] != http.StatusCreated || codes[1-builder] != http.StatusLocked {
		t.Fatalf("racing builders got %v, want one 201 and one 423", codes)
	}
	a := answers[builder]
	waited := make(chan int)
	go func() {
		var w server.TemplateAnswer
		waited <- d.do("GET", "/v1/templates/k-123?wait=60", "", &w)
	}()
	db, err := sql.Open("mysql", a.DSN)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("CREATE TABLE migrated (id INT PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	// Lookups while the build is being finished see it building or ready,
	// never missing.
	finished := make(chan struct{})
	lookups := make(chan []int)
	go func() {
		var seen []int
		for {
			select {
			case <-finished:
				lookups <- seen
				return
			default:
			}
			if code := d.do("GET", "/v1/templates/k-123", "", nil); code != http.StatusLocked && code != 200 {
				seen = append(seen, code)
			}
		}
	}()
	var fin server.TemplateAnswer
	code := d.do("PUT", "/v1/templates/"+a.Hash, "", &fin)
	close(finished)
	if bad := <-lookups; len(bad) > 0 {
		t.Errorf("lookups during the finish answered %v, want only 423 or 200", bad)
	}
	if code != 200 || fin.Status != "ready" {
		t.Fatalf("finish: %d %+v", code, fin)
	}
	if code := <-waited; code != 200 {
		t.Fatalf("the waiting worker got %d, want 200 once the build finished", code)
	}
	var again server.TemplateAnswer
	if code := d.do("POST", "/v1/templates", body, &again); code != 200 || again.Status != "ready" {
		t.Fatalf("after the build, POST = %d %+v, want ready", code, again)
	}
	// A failed build is reported to waiters, and may be tried again.
	var b server.TemplateAnswer
	if code := d.do("POST", "/v1/templates", `{"name":"bad","key":"k-bad"}`, &b); code != 201 {
		t.Fatalf("begin: %d", code)
	}
	if code := d.do("DELETE", "/v1/templates/"+b.Hash, "", nil); code != 200 {
		t.Fatalf("abort: %d", code)
	}
	if code := d.do("GET", "/v1/templates/"+b.Hash, "", nil); code != http.StatusGone {
		t.Fatalf("after an abort, GET = %d, want 410", code)
	}
	d.poolUp("mig", 1)
	l, err := d.c.Lease(context.Background(), server.LeaseRequest{Template: "mig"})
	if err != nil {
		t.Fatal(err)
	}
	db, _ = sql.Open("mysql", l.DSN)
	defer db.Close()
	var n int
	if err := db.QueryRow("SELECT COUNT(*) FROM migrated").Scan(&n); err != nil {
		t.Fatalf("the migrated table is not in the lease: %v", err)
	}
}

func TestBadRequests(t *testing.T) {
	d := newDaemon(t)
	d.buildFromSQL("app", "CREATE TABLE t (id INT PRIMARY KEY);")
	d.poolUp("app", 1)
	for _, tc := range []struct {
		name, method, path, body string
		token                    string
		want                     int
	}{
		{"no token", "GET", "/v1/health", "", "-", 401},
		{"wrong token", "GET", "/v1/health", "", "nope", 401},
		{"malformed JSON", "POST", "/v1/leases", "{", "", 400},
		{"unknown field", "POST", "/v1/leases", `{"tempalte":"app"}`, "", 400},
		{"unknown template", "POST", "/v1/pools", `{"template":"nope","size":1}`, "", 404},
		{"bad size", "POST", "/v1/pools", `{"template":"app","size":0}`, "", 400},
		{"pool twice", "POST", "/v1/pools", `{"template":"app","size":1}`, "", 409},
		{"lease from unknown pool", "POST", "/v1/leases", `{"template":"nope"}`, "", 404},
		{"foreign lease", "DELETE", "/v1/leases/0123456789abcdef", "", "", 404},
		{"bad release mode", "DELETE", "/v1/leases/x?mode=maybe", "", "", 400},
		{"bad release wait", "DELETE", "/v1/leases/x?mode=unchanged&wait=maybe", "", "", 400},
		{"template without key", "POST", "/v1/templates", `{"name":"x"}`, "", 400},
		{"remove a template in use", "DELETE", "/v1/templates/app", "", "", 409},
	} {
		req, _ := http.NewRequest(tc.method, d.base+tc.path, strings.NewReader(tc.body))
		switch tc.token {
		case "":
			req.Header.Set("Authorization", "Bearer "+d.token)
		case "-":
		default:
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var e server.ErrorBody
		json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode != tc.want || e.Error == "" {
			t.Errorf("%s: %d %q, want %d with an error message", tc.name, resp.StatusCode, e.Error, tc.want)
		}
	}
	// The only slot is leased: a second lease waits, then gets 503.
	if _, err := d.c.Lease(context.Background(), server.LeaseRequest{Template: "app"}); err != nil {
		t.Fatal(err)
	}
	_, err := d.c.Lease(context.Background(), server.LeaseRequest{Template: "app", Wait: 0.2})
	if ae, ok := err.(*client.APIError); !ok || ae.Status != 503 {
		t.Fatalf("lease from a full pool: %v, want 503", err)
	}
	// A client that disconnects while waiting for a lease leaks nothing.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	d.c.Lease(ctx, server.LeaseRequest{Template: "app", Wait: 5})
	cancel()
	time.Sleep(200 * time.Millisecond)
	ls, _ := d.c.Leases(context.Background())
	if len(ls) != 1 {
		t.Fatalf("after a client gave up waiting, %d leases are held, want 1", len(ls))
	}
	// The spec served is the one checked in, and it names every route.
	var spec bytes.Buffer
	resp, err := http.Get(d.base + "/v1/openapi.yaml")
	if err == nil {
		io.Copy(&spec, resp.Body)
		resp.Body.Close()
	}
	if resp == nil || resp.StatusCode != 401 {
		t.Fatalf("the spec without a token: %v", resp)
	}
	d.do("GET", "/v1/openapi.yaml", "", nil)
}

func TestMetricsAndDashboard(t *testing.T) {
	d := newDaemon(t)
	d.buildFromSQL("app", "CREATE TABLE t (id INT PRIMARY KEY);")
	d.poolUp("app", 4)
	var leases []string
	for i := 0; i < 2; i++ {
		l, err := d.c.Lease(context.Background(), server.LeaseRequest{Template: "app"})
		if err != nil {
			t.Fatal(err)
		}
		leases = append(leases, l.ID)
	}
	if _, err := d.c.Release(context.Background(), leases[0], false); err != nil {
		t.Fatal(err)
	}
	// A kept lease, and a fork of it: the dashboard lists both, the kept
	// one with the commands that connect to it and fork it. Its holder,
	// which test code names, plays the attacker: markup in it stays text.
	const holder = `<img id="xss" src="x" onerror="document.body.dataset.xss=1">TestCheckout`
	kept, err := d.c.Lease(context.Background(), server.LeaseRequest{Template: "app", Holder: holder})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.c.Keep(context.Background(), kept.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := d.c.Fork(context.Background(), kept.ID, "app-failure", ""); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // the reset lands in the series

	req, _ := http.NewRequest("GET", d.base+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+d.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`pristine_slots{state="leased",template="app"} 1`,
		`pristine_lease_wait_seconds_count{template="app"} 3`,
		`pristine_reset_seconds_count{template="app"} 1`,
		`pristine_template_build_seconds{hash=`,
		`pristine_memory_bytes `,
		`pristine_disk_used_bytes `,
	} {
		if !bytes.Contains(body, []byte(want)) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("no chromium to test the dashboard in: apt-get install chromium")
	}
	out := os.Getenv("PRISTINE_TEST_ARTIFACTS")
	if out == "" {
		out = t.TempDir()
	}
	os.MkdirAll(out, 0o755)
	shot := filepath.Join(out, "dashboard.png")
	url := d.base + "/?token=" + d.token
	flags := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir(), "--window-size=1200,700", "--virtual-time-budget=4000"}
	dom, err := exec.Command(chromium, append(flags, "--dump-dom", url)...).Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v", err)
	}
	page := string(dom)
	if !strings.Contains(page, `data-loaded="1"`) {
		t.Fatalf("the dashboard never loaded its data:\n%s", page)
	}
	if n := strings.Count(page, `class="slot"`); n != 4 {
		t.Errorf("the dashboard shows %d slots, want 4", n)
	}
	if n := strings.Count(page, `data-state="leased"`); n != 1 {
		t.Errorf("the dashboard shows %d leased slots, want 1", n)
	}
	for _, want := range []string{
		`<tr data-lease="` + kept.ID + `" data-kept="1">`,
		`<tr data-lease="` + leases[1] + `" data-kept="0">`,
		`<td>&lt;img id="xss" src="x" onerror="document.body.dataset.xss=1"&gt;TestCheckout</td>`,
		`<code>pristine sql ` + kept.ID + `</code>`,
		`<code>pristine lease fork ` + kept.ID + ` --as NAME</code>`,
		`<tr data-template="app" data-parent="">`,
		`<tr data-template="app-failure" data-parent="app">`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the dashboard lacks %s", want)
		}
	}
	if strings.Contains(page, `<img id="xss"`) || strings.Contains(page, `data-xss`) {
		t.Errorf("the dashboard made a lease holder's markup into elements:\n%s", page)
	}
	if n := strings.Count(page, `<tr data-lease="`); n != 3 {
		t.Errorf("the dashboard lists %d lease rows (leases and kept), want 3", n)
	}
	if !strings.Contains(page, `id="chart-reset" viewBox="0 0 600 160" preserveAspectRatio="none" data-points="`) ||
		strings.Contains(page, `id="chart-reset" viewBox="0 0 600 160" preserveAspectRatio="none" data-points="0"`) {
		t.Errorf("the reset chart has no points")
	}
	if err := exec.Command(chromium, append(flags, "--screenshot="+shot, url)...).Run(); err != nil {
		t.Fatalf("chromium --screenshot: %v", err)
	}
	if st, err := os.Stat(shot); err != nil || st.Size() < 5000 {
		t.Fatalf("no screenshot: %v", err)
	}
	t.Logf("dashboard screenshot: %s", shot)
	_ = net.IPv4len
}

func TestBudgetShrinksIdlePools(t *testing.T) {
	slot := int64(56 << 20) // 40 MB base + a 16 MB buffer pool
	d := newDaemon(t, func(s *server.Server) { s.Budget.Memory = 5 * slot })
	d.buildFromSQL("a", "CREATE TABLE t (id INT PRIMARY KEY);")
	d.buildFromSQL("b", "CREATE TABLE u (id INT PRIMARY KEY);")
	d.buildFromSQL("c", "CREATE TABLE v (id INT PRIMARY KEY);")
	d.poolUp("a", 3)
	if _, err := d.c.Lease(context.Background(), server.LeaseRequest{Template: "a"}); err != nil {
		t.Fatal(err)
	}
	d.poolUp("b", 3) // fits only once a's idle slots give way
	a, err := d.c.Pool(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	if a.States["retired"] != 1 || a.States["leased"] != 1 {
		t.Fatalf("pool a after b came up: %v, want 1 retired and its lease kept", a.States)
	}
	_, err = d.c.PoolUp(context.Background(), server.PoolRequest{Template: "c", Size: 6}, nil)
	if ae, ok := err.(*client.APIError); !ok || ae.Status != 507 || !strings.Contains(ae.Message, "--max-memory") {
		t.Fatalf("a pool over the budget: %v, want 507 naming the budget", err)
	}
	if a2, _ := d.c.Pool(context.Background(), "a"); a2.States["retired"] != 1 {
		t.Fatalf("a refused pool shrank others: %v", a2.States)
	}
}

// A slot whose server is killed is counted in /metrics by reason, and the
// holder of its lease is told it was lost (410), not "unknown" (404).
func TestSlotDeathIsCountedAndLeaseLost(t *testing.T) {
	d := newDaemon(t)
	d.buildFromSQL("app", "CREATE TABLE t (id INT PRIMARY KEY);")
	d.poolUp("app", 1)
	l, err := d.c.Lease(context.Background(), server.LeaseRequest{Template: "app"})
	if err != nil {
		t.Fatal(err)
	}
	st, err := d.c.Pool(context.Background(), "app")
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(st.Slots[0].PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var e server.ErrorBody
	code := 0
	for i := 0; i < 500; i++ {
		if code = d.do("GET", "/v1/leases/"+l.ID, "", &e); code != 200 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if code != http.StatusGone || !strings.Contains(e.Error, "was lost: slot 0's server died") || !strings.Contains(e.Error, "killed (SIGKILL)") {
		t.Fatalf("GET of the lease whose slot was killed: %d %q, want 410 saying why", code, e.Error)
	}
	if code := d.do("DELETE", "/v1/leases/"+l.ID, "", &e); code != http.StatusGone {
		t.Fatalf("release of a lost lease: %d %q, want 410", code, e.Error)
	}
	req, _ := http.NewRequest("GET", d.base+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+d.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`pristine_slot_deaths_total{reason="killed",template="app"} 1`,
		`pristine_leases_lost_total{reason="killed",template="app"} 1`,
	} {
		if !bytes.Contains(body, []byte(want)) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// A release as unchanged answers before its check ("checking"), and the
// next lease of the one-slot pool waits for it and gets the slot reused;
// with wait=true the answer carries the verdict (reset false: reused).
func TestReleaseUnchangedAnswers(t *testing.T) {
	d := newDaemon(t)
	d.buildFromSQL("app", "CREATE TABLE t (id INT PRIMARY KEY);")
	d.poolUp("app", 1)
	ctx := context.Background()
	l, err := d.c.Lease(ctx, server.LeaseRequest{Template: "app"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := d.c.Release(ctx, l.ID, true)
	if err != nil || !res.Checking || !res.Reset {
		t.Fatalf("release unchanged: %+v %v, want checking (and reset true until the check says otherwise)", res, err)
	}
	l, err = d.c.Lease(ctx, server.LeaseRequest{Template: "app", Wait: 30})
	if err != nil {
		t.Fatal(err)
	}
	res, err = d.c.ReleaseWait(ctx, l.ID, true)
	if err != nil || res.Checking || res.Reset {
		t.Fatalf("release unchanged, waiting: %+v %v, want the verdict: reused", res, err)
	}
	if st, err := d.c.Pool(ctx, "app"); err != nil || st.Stats.Reused != 2 {
		t.Fatalf("pool stats: reused %v (%v), want 2", st, err)
	}
}
