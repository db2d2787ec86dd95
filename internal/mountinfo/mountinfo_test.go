package mountinfo

import "testing"

func TestUnescape(t *testing.T) {
	for in, want := range map[string]string{`/a\040b`: "/a b", `/plain`: "/plain", `/x\134y`: `/x\y`, `/trail\04`: `/trail\04`} {
		if got := unescape(in); got != want {
			t.Errorf("unescape(%q) = %q; want %q", in, got, want)
		}
	}
}

func TestReadFindsRoot(t *testing.T) {
	ms, err := Read()
	if err != nil {
		t.Fatal(err)
	}
	m, err := At("/")
	if err != nil || m == nil || m.FSType == "" || len(ms) == 0 {
		t.Fatalf("At(/) = %+v, %v over %d mounts", m, err, len(ms))
	}
}
