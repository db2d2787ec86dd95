package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pristinedb/pristine/client"
	"github.com/pristinedb/pristine/internal/server"
)

// TestDurationBounds: ttl_seconds and wait_seconds out of range (huge,
// negative, not a number) are answered 400 with the allowed range, before
// anything is started or waited for.
func TestDurationBounds(t *testing.T) {
	d := newDaemon(t)
	d.buildFromSQL("app", "CREATE TABLE t (id INT PRIMARY KEY);")
	d.poolUp("app", 1)
	l, err := d.c.Lease(context.Background(), server.LeaseRequest{Template: "app", TTL: 7 * 24 * 3600})
	if err != nil {
		t.Fatalf("a lease of the longest TTL: %v", err)
	}
	for _, tc := range []struct {
		name, method, path, body, want string
	}{
		{"ttl 1e300", "POST", "/v1/leases", `{"template":"app","ttl_seconds":1e300}`, "604800"},
		{"ttl 1e10", "POST", "/v1/leases", `{"template":"app","ttl_seconds":1e10}`, "7 days"},
		{"ttl a second too long", "POST", "/v1/leases", `{"template":"app","ttl_seconds":604801}`, "604800"},
		{"ttl negative", "POST", "/v1/leases", `{"template":"app","ttl_seconds":-1}`, "from 0 to 604800"},
		{"wait 1e10", "POST", "/v1/leases", `{"template":"app","wait_seconds":1e10}`, "3600 seconds (1 hour)"},
		{"wait 1e300", "POST", "/v1/leases", `{"template":"app","wait_seconds":1e300}`, "3600"},
		{"wait negative", "POST", "/v1/leases", `{"template":"app","wait_seconds":-0.5}`, "3600"},
		{"ttl beyond float64", "POST", "/v1/leases", `{"template":"app","ttl_seconds":1e400}`, "malformed"},
		{"ttl NaN", "POST", "/v1/leases", `{"template":"app","ttl_seconds":NaN}`, "malformed"},
		{"ttl string", "POST", "/v1/leases", `{"template":"app","ttl_seconds":"inf"}`, "malformed"},
		{"extend 1e300", "POST", "/v1/leases/" + l.ID + "/extend", `{"ttl_seconds":1e300}`, "604800"},
		{"extend 0", "POST", "/v1/leases/" + l.ID + "/extend", `{"ttl_seconds":0}`, "more than 0"},
		{"build session 1e300", "POST", "/v1/templates", `{"name":"b","key":"k","ttl_seconds":1e300}`, "604800"},
		{"template wait 1e10", "GET", "/v1/templates/app?wait=1e10", "", "3600"},
		{"template wait NaN", "GET", "/v1/templates/app?wait=NaN", "", "3600"},
		{"template wait words", "GET", "/v1/templates/app?wait=soon", "", "3600"},
		{"slot memory too small", "POST", "/v1/pools", `{"template":"app","size":1,"slot_memory":1000}`, "at least 16777216"},
		{"min_size negative", "POST", "/v1/leases", `{"template":"app","min_size":-1}`, "from 0 (no growth) to 4096"},
		{"min_size too large", "POST", "/v1/leases", `{"template":"app","min_size":5000}`, "from 0 (no growth) to 4096"},
		{"pool size too large", "POST", "/v1/pools", `{"template":"app","size":5000}`, "from 1 to 4096"},
	} {
		var e server.ErrorBody
		if code := d.do(tc.method, tc.path, tc.body, &e); code != http.StatusBadRequest || !strings.Contains(e.Error, tc.want) {
			t.Errorf("%s: %d %q, want 400 saying %q", tc.name, code, e.Error, tc.want)
		}
	}
	// Nothing above was leased, started or extended.
	ls, _ := d.c.Leases(context.Background())
	if len(ls) != 1 || time.Until(ls[0].Expires) > 7*24*time.Hour || time.Until(ls[0].Expires) < 7*24*time.Hour-time.Hour {
		t.Fatalf("leases after refused requests: %+v", ls)
	}
	if _, err := d.cat.Get("b"); err == nil {
		t.Fatal("a refused build session made a template")
	}
	// The Go client surfaces the 400 as an APIError with the message.
	_, err = d.c.Lease(context.Background(), server.LeaseRequest{Template: "app", Wait: 1e10})
	var ae *client.APIError
	if !errors.As(err, &ae) || ae.Status != 400 || !strings.Contains(ae.Error(), "wait_seconds is 1e+10") {
		t.Fatalf("client: %v", err)
	}
}

// metric reads one unlabelled value from /metrics.
func (d *daemon) metric(name string) float64 {
	d.t.Helper()
	req, _ := http.NewRequest("GET", d.base+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+d.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		d.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	m := regexp.MustCompile(`(?m)^` + name + ` (\S+)$`).FindSubmatch(b)
	if m == nil {
		d.t.Fatalf("/metrics has no %s", name)
	}
	v, _ := strconv.ParseFloat(string(m[1]), 64)
	return v
}

// waitMetric polls /metrics until name has value want (no timed
// assertion: the test's own timeout bounds it).
func (d *daemon) waitMetric(name string, want float64) {
	d.t.Helper()
	for d.metric(name) != want {
		time.Sleep(20 * time.Millisecond)
	}
}

// TestWaiterCap: with --max-waiters N, N lease requests wait and the
// N+1st is answered 429 with Retry-After; when the waiters go, the count
// returns to zero and leases work again.
func TestWaiterCap(t *testing.T) {
	const n = 3
	d := newDaemon(t, func(s *server.Server) { s.MaxWaiters = n })
	d.buildFromSQL("app", "CREATE TABLE t (id INT PRIMARY KEY);")
	d.poolUp("app", 1)
	held, err := d.c.Lease(context.Background(), server.LeaseRequest{Template: "app"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := d.c.Lease(ctx, server.LeaseRequest{Template: "app", Wait: 600})
			errs <- err
		}()
	}
	d.waitMetric("pristine_lease_waiters", n)

	req, _ := http.NewRequest("POST", d.base+"/v1/leases", strings.NewReader(`{"template":"app","wait_seconds":600}`))
	req.Header.Set("Authorization", "Bearer "+d.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var e server.ErrorBody
	json.NewDecoder(resp.Body).Decode(&e)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "1" || !strings.Contains(e.Error, "--max-waiters") {
		t.Fatalf("request %d: %d, Retry-After %q, %q; want 429 with Retry-After 1", n+1, resp.StatusCode, resp.Header.Get("Retry-After"), e.Error)
	}
	_, err = d.c.Lease(context.Background(), server.LeaseRequest{Template: "app", Wait: 600})
	var ae *client.APIError
	if !errors.As(err, &ae) || ae.Status != 429 || ae.RetryAfter != time.Second {
		t.Fatalf("Go client on 429: %#v", err)
	}
	if got := d.metric("pristine_lease_waiters_rejected_total"); got != 2 {
		t.Fatalf("rejected_total %v, want 2", got)
	}

	// The waiters give up: nothing stays counted or leased.
	cancel()
	wg.Wait()
	close(errs)
	for err := range errs {
		if err == nil {
			t.Fatal("a waiter got a lease while the only slot was held")
		}
	}
	d.waitMetric("pristine_lease_waiters", 0)
	if _, err := d.c.Release(context.Background(), held.ID, false); err != nil {
		t.Fatal(err)
	}
	l, err := d.c.Lease(context.Background(), server.LeaseRequest{Template: "app", Wait: 600})
	if err != nil {
		t.Fatalf("a lease after the waiters left: %v", err)
	}
	if ls, _ := d.c.Leases(context.Background()); len(ls) != 1 || ls[0].ID != l.ID {
		t.Fatalf("leases: %+v, want only %s", ls, l.ID)
	}
}
