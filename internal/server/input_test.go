package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/pristinedb/pristine/api"
	"github.com/pristinedb/pristine/internal/server"
)

// TestBadPoolAndBuildInput: a pool request whose slot_disk is negative or
// beyond 1 PiB (a negative cap used to mean no cap at all), and an API
// build whose database has a backtick or is a system schema (the build
// account has every privilege on the build server, and leases get every
// privilege on the template's databases) are answered 400 with the rule,
// before anything is started.
func TestBadPoolAndBuildInput(t *testing.T) {
	d := newDaemon(t)
	d.buildFromSQL("app", "CREATE TABLE t (id INT PRIMARY KEY);")
	for _, tc := range []struct {
		name, path, body, want string
	}{
		{"slot_disk -5", "/v1/pools", `{"template":"app","size":1,"slot_disk":-5}`, "slot_disk is -5: it must be from 0 to 1125899906842624 bytes (1 PiB), or -1 for no cap"},
		{"slot_disk -2", "/v1/pools", `{"template":"app","size":1,"slot_disk":-2}`, "or -1 for no cap"},
		{"slot_disk beyond 1 PiB", "/v1/pools", `{"template":"app","size":1,"slot_disk":1152921504606846976}`, "from 0 to"},
		{"database with a backtick", "/v1/templates", "{\"name\":\"x\",\"key\":\"k\",\"database\":\"a`b\"}", "'`'"},
		{"database mysql", "/v1/templates", `{"name":"x","key":"k","database":"mysql"}`, "system schema"},
		{"database MySQL", "/v1/templates", `{"name":"x","key":"k","database":"MySQL"}`, "system schema"},
		{"database information_schema", "/v1/templates", `{"name":"x","key":"k","database":"information_schema"}`, "system schema"},
		{"database performance_schema", "/v1/templates", `{"name":"x","key":"k","database":"performance_schema"}`, "system schema"},
		{"database sys", "/v1/templates", `{"name":"x","key":"k","database":"sys"}`, "system schema"},
		{"name mysql as its database", "/v1/templates", `{"name":"mysql","key":"k"}`, `pass "database"`},
	} {
		req, _ := http.NewRequest("POST", d.base+tc.path, strings.NewReader(tc.body))
		req.Header.Set("Authorization", "Bearer "+d.token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var e server.ErrorBody
		json.Unmarshal(b, &e)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(e.Error, tc.want) {
			t.Errorf("%s: %d %.200s, want 400 saying %q", tc.name, resp.StatusCode, b, tc.want)
		}
	}
	for _, name := range []string{"x", "mysql"} {
		if _, err := d.cat.Get(name); err == nil {
			t.Errorf("a refused build made template %s", name)
		}
	}
	var st []api.PoolStatus
	if code := d.do("GET", "/v1/pools", "", &st); code != 200 || len(st) != 0 {
		t.Fatalf("pools after refused requests: %d %+v, want none", code, st)
	}
	// The refused requests reserved nothing: the pool comes up, and -1
	// (`pool up --slot-disk none`) still means no cap.
	if _, err := d.c.PoolUp(context.Background(), server.PoolRequest{Template: "app", Size: 1, SlotDisk: -1}, nil); err != nil {
		t.Fatalf("pool up with slot_disk -1: %v", err)
	}
}
