package server_test

import (
	"encoding/json"
	"testing"

	"github.com/pristinedb/pristine/api"
)

// TestPoolDiskOnlyWhenAsked: one pool's status measures its disk use
// (a walk of every slot's files) only with ?disk=true, so that a client
// polling the status while its slots reset does not walk them.
func TestPoolDiskOnlyWhenAsked(t *testing.T) {
	d := newDaemon(t)
	d.buildFromSQL("app", "CREATE TABLE t (id INT PRIMARY KEY); INSERT INTO t VALUES (1);")
	d.poolUp("app", 1)
	for _, c := range []struct {
		path     string
		wantDisk bool
	}{{"/v1/pools/app", false}, {"/v1/pools/app?disk=true", true}} {
		code, body := d.as(d.token, "GET", c.path, "")
		var st api.PoolStatus
		if err := json.Unmarshal([]byte(body), &st); code != 200 || err != nil {
			t.Fatalf("GET %s: %d %s", c.path, code, body)
		}
		if got := st.Disk != nil; got != c.wantDisk {
			t.Errorf("GET %s: disk measured %v, want %v (%+v)", c.path, got, c.wantDisk, st.Disk)
		}
		// On a filesystem without extent records (tmpfs) the answer says
		// why it could not measure.
		if c.wantDisk && st.Disk.TemplateLogical <= 0 && st.Disk.Error == "" {
			t.Errorf("GET %s: disk %+v, want the template's bytes or why they are not there", c.path, st.Disk)
		}
	}
}
