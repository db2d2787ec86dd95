package api

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func TestSecretMarshals(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    Secret
		want string
	}{
		{"zero", Secret{}, `""`},
		{"hidden", Hidden("hunter2"), `""`},
		{"revealed", Reveal("hunter2"), `"hunter2"`},
		{"revealed with quotes", Reveal(`a"b`), `"a\"b"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.s)
			if err != nil || string(b) != tc.want {
				t.Fatalf("marshal: %s %v, want %s", b, err, tc.want)
			}
		})
	}
}

func TestSecretNeverPrints(t *testing.T) {
	for _, s := range []Secret{Hidden("hunter2"), Reveal("hunter2")} {
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q"} {
			if out := fmt.Sprintf(verb, s); strings.Contains(out, "hunter2") {
				t.Errorf("%s of a Secret printed the password: %s", verb, out)
			}
			if out := fmt.Sprintf(verb, Lease{Password: s}); strings.Contains(out, "hunter2") {
				t.Errorf("%s of a Lease printed the password: %s", verb, out)
			}
		}
		if s.Value() != "hunter2" {
			t.Errorf("Value: %q, want hunter2", s.Value())
		}
	}
}

// A lease decoded from the daemon's answer keeps its credentials for the
// program, but encoding it again (a log, a cache, a debug dump) leaves
// them out unless the program asks with WithCredentials.
func TestLeaseDecodedThenEncodedIsRedacted(t *testing.T) {
	wire := `{"id":"l1","template":"app","slot":0,"host":"127.0.0.1","port":3307,"socket":"/s","user":"u","password":"hunter2","database":"d","dsn":"u:hunter2@tcp(127.0.0.1:3307)/d","url":"mysql://u:hunter2@127.0.0.1:3307/d","created":"0001-01-01T00:00:00Z","expires":"0001-01-01T00:00:00Z","env":["MYSQL_PWD=hunter2"]}`
	var l Lease
	if err := json.Unmarshal([]byte(wire), &l); err != nil {
		t.Fatal(err)
	}
	if l.Password.Value() != "hunter2" || l.DSN == "" || len(l.Env) != 1 {
		t.Fatalf("decoded lease lost its credentials: %+v", l)
	}
	b, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "hunter2") {
		t.Errorf("re-encoded lease carries the password: %s", b)
	}
	for _, want := range []string{`"password":""`, `"dsn":""`, `"url":""`, `"env":null`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("re-encoded lease lacks %s: %s", want, b)
		}
	}
	b, err = json.Marshal(l.WithCredentials())
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != wire {
		t.Errorf("WithCredentials:\n got %s\nwant %s", b, wire)
	}
}

func TestTemplateAnswerPassword(t *testing.T) {
	for _, tc := range []struct {
		name string
		a    TemplateAnswer
		want string
	}{
		{"ready: no password field", TemplateAnswer{Status: StatusReady, Hash: "h"}, `{"status":"ready","hash":"h"}`},
		{"hidden: no credentials", TemplateAnswer{Status: StatusBuild, Password: Hidden("pw"), DSN: "u:pw@tcp(x)/d", Env: []string{"MYSQL_PWD=pw"}},
			`{"status":"build"}`},
		{"build: revealed", TemplateAnswer{Status: StatusBuild, User: "u", Password: Reveal("pw"), DSN: "u:pw@tcp(x)/d"},
			`{"status":"build","user":"u","password":"pw","dsn":"u:pw@tcp(x)/d"}`},
		{"template's password never", TemplateAnswer{Status: StatusReady, Template: &Template{Name: "app", Password: Hidden("pw")}},
			`{"status":"ready","template":{"name":"app","hash":"","created":"0001-01-01T00:00:00Z","last_used":"0001-01-01T00:00:00Z","server":"","flavor":"","backend":"","log_file_size":0,"databases":null,"user":"","password":"","bytes":0,"build_seconds":0}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.a)
			if err != nil || string(b) != tc.want {
				t.Fatalf("marshal:\n got %s %v\nwant %s", b, err, tc.want)
			}
		})
	}
}
