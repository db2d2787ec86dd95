package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/pristinedb/pristine/api"
	"github.com/pristinedb/pristine/internal/server"
)

// TestUnkeyedBuildIsRefused plays a client whose template is built by
// code (a migrate command) that no file keys: its key is the command's
// text alone, so a changed migration would get the old template. The
// daemon refuses it with 400 and the code every client answers in its
// own terms, before any build server starts; a request that names files,
// or opts out with allow_stale, gets its build.
func TestUnkeyedBuildIsRefused(t *testing.T) {
	d := newDaemon(t)
	var e server.ErrorBody
	if code := d.do("POST", "/v1/templates", `{"name":"unkeyed","key":"k-cmd","runs_code":true}`, &e); code != http.StatusBadRequest ||
		e.Code != api.CodeUnkeyedBuild || !strings.Contains(e.Error, "allow_stale") || !strings.Contains(e.Error, "files") {
		t.Fatalf("a build that runs code no file keys: %d %+v, want 400 with code %s naming files and allow_stale", code, e, api.CodeUnkeyedBuild)
	}
	if _, err := d.cat.Get("unkeyed"); err == nil {
		t.Fatal("a refused build made its template")
	}
	for _, body := range []string{
		`{"name":"keyed","key":"k-files","runs_code":true,"key_files":1}`,
		`{"name":"stale","key":"k-stale","runs_code":true,"allow_stale":true}`,
	} {
		var a server.TemplateAnswer
		if code := d.do("POST", "/v1/templates", body, &a); code != http.StatusCreated || a.Status != api.StatusBuild {
			t.Fatalf("%s: %d %+v, want 201 build", body, code, a)
		}
		if code := d.do("DELETE", "/v1/templates/"+a.Hash, "", nil); code >= 300 {
			t.Fatalf("abort %s: %d", body, code)
		}
	}
}
