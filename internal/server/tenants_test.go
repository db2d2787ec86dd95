package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pristinedb/pristine/internal/server"
)

// groupTokens writes a --group-tokens file of runner-a and runner-b and
// returns their tokens and the groups it loads to.
func groupTokens(t *testing.T) (tokA, tokB string, groups map[string]string) {
	t.Helper()
	tokA, tokB = strings.Repeat("a", 40), strings.Repeat("b", 40)
	file := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(file, []byte("runner-a "+tokA+"\nrunner-b "+tokB+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	groups, err := server.LoadGroupTokens(file)
	if err != nil {
		t.Fatal(err)
	}
	return tokA, tokB, groups
}

// as sends a request over TCP with token and returns the status and body.
func (d *daemon) as(token, method, path, body string) (int, string) {
	d.t.Helper()
	req, _ := http.NewRequest(method, d.base+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		d.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// begin asks for a build as token's holder and decodes the answer.
func (d *daemon) begin(token, body string) (int, server.TemplateAnswer) {
	d.t.Helper()
	code, out := d.as(token, "POST", "/v1/templates", body)
	var a server.TemplateAnswer
	if err := json.Unmarshal([]byte(out), &a); err != nil {
		d.t.Fatalf("begin %s: %d %s", body, code, out)
	}
	return code, a
}

// TestGroupTemplatesAreTheirOwn: two runner groups on one node. Group B
// builds a template under a key and loads its own row; group A naming the
// same key gets a build of its own (another hash, a server without B's
// row), not B's template, and cannot find, pool, lease, abort, finish or
// remove what B built, nor remove the operator's template. The operator's
// template of the same name and key is the groups' to use; a group's
// build of the operator's template name never stands in for it.
func TestGroupTemplatesAreTheirOwn(t *testing.T) {
	tokA, tokB, groups := groupTokens(t)
	d := newDaemon(t, func(s *server.Server) { s.GroupTokens = groups })
	op := d.buildFromSQL("app", "CREATE TABLE t (id INT PRIMARY KEY);")
	d.poolUp("app", 1)

	// B builds "victim" under the key and loads its own row.
	victim := `{"name":"victim","key":"sha256:victim-migrations-v1"}`
	code, b := d.begin(tokB, victim)
	if code != http.StatusCreated {
		t.Fatalf("runner-b's build: %d %+v", code, b)
	}
	if err := execSQL(b.DSN, "CREATE TABLE poison (who VARCHAR(8))", "INSERT INTO poison VALUES ('runner-b')"); err != nil {
		t.Fatal(err)
	}
	if code, body := d.as(tokB, "PUT", "/v1/templates/"+b.Hash, ""); code != 200 {
		t.Fatalf("runner-b's finish: %d %s", code, body)
	}
	// A names the same key: a build of its own, on a server without B's row.
	code, a := d.begin(tokA, victim)
	if code != http.StatusCreated || a.Hash == b.Hash {
		t.Fatalf("runner-a naming runner-b's key: %d %s %q (runner-b's is %s), want 201 and a build of its own", code, a.Status, a.Hash, b.Hash)
	}
	if n := countRows(t, a.DSN, "SELECT COUNT(*) FROM information_schema.tables WHERE table_name = 'poison'"); n != 0 {
		t.Fatalf("runner-a's build server has runner-b's table")
	}
	if code, body := d.as(tokA, "DELETE", "/v1/templates/"+a.Hash, ""); code != 200 {
		t.Fatalf("runner-a aborting its own build: %d %s", code, body)
	}
	d.poolUp(b.Hash, 1) // the operator may pool any template
	for _, c := range []struct{ what, method, path, body string }{
		{"looking up runner-b's template by its key", "GET", "/v1/templates/sha256:victim-migrations-v1", ""},
		{"looking up runner-b's template by its hash", "GET", "/v1/templates/" + b.Hash, ""},
		{"bringing up a pool of runner-b's template", "POST", "/v1/pools", `{"template":"` + b.Hash + `","size":1}`},
		{"a lease of runner-b's pool", "POST", "/v1/leases", `{"template":"victim","wait_seconds":1}`},
		{"the status of runner-b's pool", "GET", "/v1/pools/victim", ""},
		{"bringing runner-b's pool down", "DELETE", "/v1/pools/victim", ""},
		{"removing runner-b's template", "DELETE", "/v1/templates/" + b.Hash, ""},
	} {
		if code, body := d.as(tokA, c.method, c.path, c.body); code != http.StatusNotFound {
			t.Errorf("runner-a %s: %d %s, want 404", c.what, code, body)
		}
	}
	for _, path := range []string{"/v1/templates", "/v1/pools"} {
		if code, body := d.as(tokA, "GET", path, ""); code != 200 || strings.Contains(body, b.Hash) || !strings.Contains(body, op.Hash) {
			t.Errorf("runner-a's GET %s: %d %s, want the operator's and not runner-b's", path, code, body)
		}
	}
	// The operator's template: used, never removed.
	if code, body := d.as(tokA, "DELETE", "/v1/templates/app", ""); code != http.StatusForbidden || !strings.Contains(body, "operator") {
		t.Errorf("runner-a removing the operator's template: %d %s, want 403", code, body)
	}
	if code, body := d.as(tokA, "POST", "/v1/leases", `{"template":"app","wait_seconds":5}`); code != 200 {
		t.Errorf("runner-a leasing the operator's pool: %d %s", code, body)
	}

	// B's build in progress: A can neither abort nor finish it.
	code, b2 := d.begin(tokB, `{"name":"second","key":"k2"}`)
	if code != http.StatusCreated {
		t.Fatalf("runner-b's second build: %d %+v", code, b2)
	}
	for _, method := range []string{"DELETE", "PUT"} {
		if code, body := d.as(tokA, method, "/v1/templates/"+b2.Hash, ""); code != http.StatusNotFound {
			t.Errorf("runner-a %s of runner-b's build session: %d %s, want 404", method, code, body)
		}
	}
	if code, body := d.as(tokB, "PUT", "/v1/templates/"+b2.Hash, ""); code != 200 {
		t.Errorf("runner-b finishing its build after runner-a's tries: %d %s, want 200", code, body)
	}
	if code, _ := d.as(d.token, "GET", "/v1/templates/"+b.Hash, ""); code != 200 {
		t.Errorf("runner-b's template after runner-a's tries: %d, want it there", code)
	}

	// The operator's build of a name and key: a group naming them gets it.
	code, o := d.begin(d.token, `{"name":"shared","key":"k-shared"}`)
	if code != http.StatusCreated {
		t.Fatalf("the operator's build: %d %+v", code, o)
	}
	if code, body := d.as(d.token, "PUT", "/v1/templates/"+o.Hash, ""); code != 200 {
		t.Fatalf("the operator's finish: %d %s", code, body)
	}
	if code, got := d.begin(tokA, `{"name":"shared","key":"k-shared"}`); code != 200 || got.Hash != o.Hash {
		t.Errorf("runner-a naming the operator's key: %d %s %s, want 200 ready with the operator's %s", code, got.Status, got.Hash, o.Hash)
	}
	if code, body := d.as(tokA, "DELETE", "/v1/templates/shared", ""); code != http.StatusForbidden {
		t.Errorf("runner-a removing the operator's template shared (no pool): %d %s, want 403", code, body)
	}
	// A group's newer build of the operator's template name: the group
	// finds its own, the operator (and so every pool up by name) its own,
	// and the group cannot take the name for a pool of its own.
	code, mine := d.begin(tokA, `{"name":"shared","key":"k-mine"}`)
	if code != http.StatusCreated {
		t.Fatalf("runner-a's build named shared: %d %+v", code, mine)
	}
	if code, body := d.as(tokA, "PUT", "/v1/templates/"+mine.Hash, ""); code != 200 {
		t.Fatalf("runner-a's finish of shared: %d %s", code, body)
	}
	for _, c := range []struct{ who, token, want string }{{"runner-a", tokA, mine.Hash}, {"the operator", d.token, o.Hash}} {
		if code, body := d.as(c.token, "GET", "/v1/templates/shared", ""); code != 200 || !strings.Contains(body, `"hash":"`+c.want) {
			t.Errorf("%s looking up shared: %d %s, want %s", c.who, code, body, c.want)
		}
	}
	if code, body := d.as(tokA, "POST", "/v1/pools", `{"template":"shared","size":1}`); code != http.StatusConflict || !strings.Contains(body, "another name") {
		t.Errorf("runner-a's pool of its own shared, the operator's template's name: %d %s, want 409", code, body)
	}
}

// TestGroupPoolLimits: a group token cannot lift a slot's disk or memory
// cap (-1) nor raise it, or the buffer pool, above the node's limits, cannot make a pool
// larger than its slot cap, by pool up or a lease's min_size, nor its own
// templates' pools together; it may bring down its own pool, not the
// operator's.
func TestGroupPoolLimits(t *testing.T) {
	tokA, _, groups := groupTokens(t)
	d := newDaemon(t, func(s *server.Server) { s.GroupTokens, s.MaxSlotsPerGroup = groups, 3 })
	d.buildFromSQL("app", "CREATE TABLE t (id INT PRIMARY KEY);")
	d.buildFromSQL("fresh", "CREATE TABLE t (id INT PRIMARY KEY);") // no pool yet
	d.poolUp("app", 1)
	for _, c := range []struct{ body, want string }{
		{`{"template":"fresh","size":1,"slot_disk":-1}`, "slot_disk -1 (no cap)"},
		{`{"template":"fresh","size":1,"slot_memory":-1}`, "slot_memory -1"},
		{`{"template":"fresh","size":1,"slot_disk":2147483648}`, "at most 1073741824 bytes"},
		{`{"template":"fresh","size":1,"slot_memory":536870912}`, "at most 268435456 bytes"},
		{`{"template":"fresh","size":1,"buffer_pool":1073741824}`, "buffer_pool 1073741824"},
		{`{"template":"fresh","size":4}`, "serve --max-slots-per-group 3"},
		{`{"template":"app","size":4}`, "serve --max-slots-per-group 3"},
	} {
		if code, body := d.as(tokA, "POST", "/v1/pools", c.body); code != http.StatusForbidden || !strings.Contains(body, c.want) {
			t.Errorf("runner-a's pool up %s: %d %s, want 403 naming %q", c.body, code, body, c.want)
		}
	}
	if code, body := d.as(tokA, "POST", "/v1/leases", `{"template":"app","min_size":4,"wait_seconds":1}`); code != http.StatusForbidden || !strings.Contains(body, "--max-slots-per-group 3") {
		t.Errorf("runner-a's lease with min_size 4: %d %s, want 403 naming the cap", code, body)
	}
	if code, body := d.as(tokA, "POST", "/v1/pools", `{"template":"app","size":3}`); code != 200 || !strings.Contains(body, `"grown":2`) {
		t.Errorf("runner-a growing the operator's pool to its cap: %d %s", code, body)
	}
	// The pools of its own templates share the cap.
	for _, name := range []string{"mine", "more"} {
		code, a := d.begin(tokA, `{"name":"`+name+`","key":"k-`+name+`"}`)
		if code != http.StatusCreated {
			t.Fatalf("runner-a's build of %s: %d %+v", name, code, a)
		}
		if code, body := d.as(tokA, "PUT", "/v1/templates/"+a.Hash, ""); code != 200 {
			t.Fatalf("runner-a's finish of %s: %d %s", name, code, body)
		}
	}
	if code, body := d.as(tokA, "POST", "/v1/pools", `{"template":"mine","size":2}`); code != 200 || !strings.Contains(body, `"status"`) {
		t.Fatalf("runner-a's pool of 2 of its own template: %d %s", code, body)
	}
	if code, body := d.as(tokA, "POST", "/v1/pools", `{"template":"more","size":2}`); code != http.StatusForbidden || !strings.Contains(body, "other pools have 2 slots") {
		t.Errorf("runner-a's second pool of 2 beyond its cap of 3: %d %s, want 403", code, body)
	}
	if code, body := d.as(tokA, "DELETE", "/v1/pools/mine", ""); code != 200 {
		t.Errorf("runner-a bringing its own pool down: %d %s", code, body)
	}
	if code, body := d.as(tokA, "POST", "/v1/pools", `{"template":"more","size":2}`); code != 200 || !strings.Contains(body, `"status"`) {
		t.Errorf("runner-a's pool of 2 once its other one is down: %d %s", code, body)
	}
	if code, body := d.as(tokA, "DELETE", "/v1/pools/app", ""); code != http.StatusForbidden {
		t.Errorf("runner-a bringing the operator's pool down: %d %s, want 403", code, body)
	}
}
