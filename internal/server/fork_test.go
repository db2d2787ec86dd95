package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/pristinedb/pristine/api"
	"github.com/pristinedb/pristine/internal/server"
	"github.com/pristinedb/pristine/internal/template"
)

// TestForkAPI: POST /v1/leases/{id}/fork through the daemon with runner
// groups. Another group's token cannot fork a lease (404, as every other
// use of it); the lease's group forks it into a template of its own,
// with the operator's template as parent; the same key answers with the
// same template without a second build; a bad name is refused (400), and
// so is a name of a template that is no fork of the parent (409); the
// parent cannot be removed while its fork is kept (409 naming the fork
// and force). A new fork's answer lists its phases.
func TestForkAPI(t *testing.T) {
	tokA, tokB, groups := groupTokens(t)
	d := newDaemon(t, func(s *server.Server) { s.GroupTokens = groups })
	op := d.buildFromSQL("app", "CREATE TABLE t (id INT PRIMARY KEY); INSERT INTO t VALUES (1);")
	d.poolUp("app", 1)
	code, body := d.as(tokA, "POST", "/v1/leases", `{"template":"app","wait_seconds":30}`)
	var l api.Lease
	if err := json.Unmarshal([]byte(body), &l); code != 200 || err != nil {
		t.Fatalf("runner-a's lease: %d %s", code, body)
	}
	if err := execSQL(l.DSN, "INSERT INTO t VALUES (2)"); err != nil {
		t.Fatal(err)
	}
	path := "/v1/leases/" + l.ID + "/fork"
	if code, body := d.as(tokB, "POST", path, `{"name":"stolen"}`); code != http.StatusNotFound {
		t.Errorf("runner-b forking runner-a's lease: %d %s, want 404", code, body)
	}
	fork := func(req string) (int, api.ForkAnswer) {
		t.Helper()
		code, body := d.as(tokA, "POST", path, req)
		var a api.ForkAnswer
		if code == 200 {
			if err := json.Unmarshal([]byte(body), &a); err != nil {
				t.Fatal(err)
			}
		}
		return code, a
	}
	code, first := fork(`{"name":"app-seeded","key":"seed-v1"}`)
	if code != 200 || !first.Built || first.Template.Parent != op.Hash || first.Template.ParentName != "app" {
		t.Fatalf("runner-a's fork: %d %+v", code, first)
	}
	// The answer says where the daemon's time went, step by step.
	var named []string
	sum := 0.0
	for _, ph := range first.Phases {
		named = append(named, ph.Name)
		sum += ph.Seconds
	}
	if got := strings.Join(named, ", "); !strings.Contains(got, template.PhaseSnapshot) || !strings.Contains(got, template.PhaseStop) || sum <= 0 || sum > first.Seconds {
		t.Errorf("the fork's phases: %s (%.3f s of %.3f s), want the snapshot and the slow clean stop among them, within the fork's time", got, sum, first.Seconds)
	}
	code, again := fork(`{"name":"app-seeded","key":"seed-v1"}`)
	if code != 200 || again.Built || again.Template.Hash != first.Template.Hash || len(again.Phases) != 0 {
		t.Errorf("the same key again: %d built %v hash %s, want the first fork %s, not built (and no phases: %v)", code, again.Built, again.Template.Hash, first.Template.Hash, again.Phases)
	}
	if code, body := d.as(tokB, "GET", "/v1/templates", ""); code != 200 || strings.Contains(body, first.Template.Hash) {
		t.Errorf("runner-b lists runner-a's fork: %d %s", code, body)
	}
	for _, c := range []struct {
		req  string
		want int
	}{{`{"name":"../x"}`, http.StatusBadRequest}, {`{"name":"app"}`, http.StatusConflict}} {
		if code, _ := fork(c.req); code != c.want {
			t.Errorf("fork %s: %d, want %d", c.req, code, c.want)
		}
	}
	code, body = d.as(d.token, "DELETE", "/v1/templates/"+op.Hash, "")
	if code != http.StatusConflict || !strings.Contains(body, "app-seeded") || !strings.Contains(body, "force") {
		t.Errorf("removing the fork's parent: %d %s, want 409 naming the fork and force", code, body)
	}
}
