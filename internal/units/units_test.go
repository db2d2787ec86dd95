package units

import "testing"

func TestBytesAndParse(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
	}{{0, "0 B"}, {1023, "1023 B"}, {1536, "1.5 KiB"}, {8 << 30, "8.0 GiB"}, {3 << 40, "3.0 TiB"}} {
		if got := Bytes(tc.n); got != tc.want {
			t.Errorf("Bytes(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
	for _, tc := range []struct {
		in   string
		want int64
		bad  bool
	}{{"8G", 8 << 30, false}, {"512m", 512 << 20, false}, {"1.5GiB", 3 << 29, false}, {"1048576", 1 << 20, false}, {"lots", 0, true}, {"-1G", 0, true}} {
		got, err := Parse(tc.in)
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("Parse(%q) = %d, %v", tc.in, got, err)
		}
	}
}
