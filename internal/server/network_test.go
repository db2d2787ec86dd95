package server_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pristinedb/pristine/api"
	"github.com/pristinedb/pristine/internal/server"
)

// TestLeaseCapPerGroup: with --max-leases-per-group 1, a group holding a
// lease is answered 429 naming the cap, and other groups still lease. A
// runner whose group token places it in group a cannot escape its cap by
// naming another group in the header (403), cannot see, release or
// extend another group's lease, and cannot bring the pool down.
func TestLeaseCapPerGroup(t *testing.T) {
	tokA, tokB := strings.Repeat("a", 40), strings.Repeat("b", 40)
	file := filepath.Join(t.TempDir(), "tokens")
	os.WriteFile(file, []byte("# runners\nrunner-a "+tokA+"\nrunner-b "+tokB+"\n"), 0o600)
	groups, err := server.LoadGroupTokens(file)
	if err != nil {
		t.Fatal(err)
	}
	d := newDaemon(t, func(s *server.Server) { s.MaxLeasesPerGroup, s.GroupTokens = 1, groups })
	d.buildFromSQL("app", "CREATE TABLE t (id INT PRIMARY KEY);")
	d.poolUp("app", 3)

	as := func(token, group, method, path, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, d.base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		if group != "" {
			req.Header.Set(server.GroupHeader, group)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		buf := make([]byte, 4096)
		for {
			n, err := resp.Body.Read(buf)
			b.Write(buf[:n])
			if err != nil {
				break
			}
		}
		return resp.StatusCode, b.String()
	}
	lease := `{"template":"app","ttl_seconds":60,"wait_seconds":1}`
	code, body := as(tokA, "", "POST", "/v1/leases", lease)
	if code != 200 || !strings.Contains(body, `"group":"runner-a"`) {
		t.Fatalf("first lease of runner-a: %d %s", code, body)
	}
	idA := body[strings.Index(body, `"id":"`)+6:]
	idA = idA[:strings.Index(idA, `"`)]
	if code, body := as(tokA, "", "POST", "/v1/leases", lease); code != http.StatusTooManyRequests || !strings.Contains(body, "--max-leases-per-group 1") {
		t.Errorf("second lease of runner-a: %d %s, want 429 naming the cap", code, body)
	}
	if code, body := as(tokA, "runner-c", "POST", "/v1/leases", lease); code != http.StatusForbidden {
		t.Errorf("runner-a naming group runner-c: %d %s, want 403", code, body)
	}
	if code, body := as(tokB, "", "POST", "/v1/leases", lease); code != 200 || !strings.Contains(body, `"group":"runner-b"`) {
		t.Errorf("runner-b, another group: %d %s", code, body)
	}
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/v1/leases/" + idA, ""},
		{"DELETE", "/v1/leases/" + idA, ""},
		{"POST", "/v1/leases/" + idA + "/extend", `{"ttl_seconds":600}`},
	} {
		if code, body := as(tokB, "", c.method, c.path, c.body); code != http.StatusNotFound || strings.Contains(body, "password") {
			t.Errorf("runner-b %s %s of runner-a's lease: %d %s, want 404", c.method, c.path, code, body)
		}
	}
	if code, body := as(tokB, "", "GET", "/v1/leases", ""); code != 200 || strings.Contains(body, idA) || !strings.Contains(body, "runner-b") {
		t.Errorf("runner-b's list of leases: %d %s, want its own only", code, body)
	}
	if code, _ := as(tokB, "", "DELETE", "/v1/pools/app", ""); code != http.StatusForbidden {
		t.Errorf("runner-b bringing the pool down: %d, want 403", code)
	}
	// The root's own token names groups by header: group x is capped too.
	if code, _ := as(d.token, "x", "POST", "/v1/leases", lease); code != 200 {
		t.Errorf("operator's token, group x: %d", code)
	}
	if code, body := as(d.token, "x", "POST", "/v1/leases", lease); code != http.StatusTooManyRequests {
		t.Errorf("operator's token, group x again: %d %s, want 429", code, body)
	}
	// Releasing frees the group's place.
	if code, body := as(tokA, "", "DELETE", "/v1/leases/"+idA, ""); code != 200 {
		t.Fatalf("runner-a releasing its lease: %d %s", code, body)
	}
	if code, body := as(tokA, "", "POST", "/v1/leases", lease); code != 200 {
		t.Errorf("runner-a after its release: %d %s", code, body)
	}
	var ls []api.Lease
	if code := d.do("GET", "/v1/leases", "", &ls); code != 200 || len(ls) != 3 {
		t.Errorf("leases held: %d %d, want 3", code, len(ls))
	}
}
