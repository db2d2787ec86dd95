package server

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/pristinedb/pristine/internal/catalog"
	"github.com/pristinedb/pristine/internal/pool"
)

// The wire types must encode exactly as the daemon's own structs did
// before they had a package of their own: the Python and PHP clients and
// openapi.yaml read these bytes.
func TestWireBytesUnchanged(t *testing.T) {
	now := time.Date(2026, 11, 23, 10, 0, 0, 123, time.UTC)
	full := pool.Lease{ID: "l1", Template: "app", Slot: 2, Holder: "h", Host: "127.0.0.1", Port: 3307, Socket: "/s",
		User: "u", Password: "hunter2", Database: "d", DSN: "u:hunter2@tcp(127.0.0.1:3307)/d",
		URL: "mysql://u:hunter2@127.0.0.1:3307/d", Created: now, Expires: now.Add(time.Hour),
		Env: []string{"MYSQL_PWD=hunter2"}, OptionFile: "/o/my.cnf", Kept: true, PID: 9, PIDStart: "77", Clone: "c"}
	listed := full // what GET /v1/leases sent: blanked by hand
	listed.Password, listed.DSN, listed.URL, listed.Env = "", "", "", nil
	meta := &catalog.Meta{Name: "app", Hash: "abc", Key: "k", Created: now, LastUsed: now, Server: "10.11", Flavor: "mariadb",
		Backend: "reflink", LogFileSize: 1 << 20, ServerOptions: []string{"a=b"}, Databases: []string{"d"}, User: "u",
		Password: "hunter2", Accounts: "2", Bytes: 5, BuildSeconds: 1.5, Inputs: []string{"x"}, Warnings: []string{"w"}, InitCmd: "i"}
	// What the daemon sent for a template before the wire types had a
	// package of their own (meta.json has since dropped an empty password;
	// the wire keeps it).
	blanked := json.RawMessage(`{"name":"app","hash":"abc","key":"k","created":"2026-11-23T10:00:00.000000123Z","last_used":"2026-11-23T10:00:00.000000123Z","server":"10.11","flavor":"mariadb","backend":"reflink","log_file_size":1048576,"server_options":["a=b"],"databases":["d"],"user":"u","password":"","accounts":"2","bytes":5,"build_seconds":1.5,"inputs":["x"],"warnings":["w"],"init_cmd":"i"}`)
	status := pool.Status{Template: "app", Hash: "abc", Size: 2, DBsPerSlot: 1, Backend: "reflink",
		States: map[pool.State]int{pool.Ready: 1, pool.Leased: 1}, Leased: 1,
		Stats: pool.Stats{UpSeconds: 1, Leases: 3, Expired: 1, HolderGone: 1, Reused: 1, JournalErrors: 1, Replaced: 1,
			ResetFailures: 1, OverCap: 1, CapKills: 1, SlotDeaths: map[string]int64{"oom": 1}, LeasesLost: map[string]int64{}},
		WaitP50MS: 0.5, WaitP99MS: 1, ResetP50MS: 2, ResetP99MS: 3, ResetMaxMS: 4, DiskCap: "1 GB", MemoryCap: "256 MiB",
		Slots: []pool.SlotStatus{{Slot: 0, State: pool.Ready, Port: 3307, PID: 5, Leases: 0, Since: now, Error: "e"}, {Slot: 1}}}
	bare := pool.Status{Template: "app", States: map[pool.State]int{}}

	for _, tc := range []struct {
		name     string
		old, new any
	}{
		{"lease to its holder", full, leaseFor(full)},
		{"lease in a list", listed, leaseOut(full)},
		{"template", blanked, TemplateOut(meta)},
		{"template list", []json.RawMessage{blanked}, TemplatesOut([]*catalog.Meta{meta})},
		{"no templates", []*catalog.Meta(nil), TemplatesOut(nil)},
		{"pool status", status, StatusOut(status)},
		{"pool status without slots", bare, StatusOut(bare)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := json.Marshal(tc.old)
			if err != nil {
				t.Fatal(err)
			}
			n, err := json.Marshal(tc.new)
			if err != nil {
				t.Fatal(err)
			}
			if string(o) != string(n) {
				t.Errorf("wire bytes changed:\n old %s\n new %s", o, n)
			}
		})
	}
	if b, _ := json.Marshal(leaseOut(full)); strings.Contains(string(b), "hunter2") {
		t.Errorf("a listed lease carries the password: %s", b)
	}
	if b, _ := json.Marshal(TemplateOut(meta)); strings.Contains(string(b), "hunter2") {
		t.Errorf("a template carries its build password: %s", b)
	}
}
