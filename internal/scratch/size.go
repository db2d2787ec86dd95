package scratch

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseSize parses a size such as "8G", "512M", "1.5T" or "1073741824".
// Units are binary (K = 1024) and may be followed by "B" or "iB".
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(strings.ToUpper(s))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "IB"), "B")
	mult := int64(1)
	if n := len(t); n > 0 {
		if i := strings.IndexByte("KMGT", t[n-1]); i >= 0 {
			mult = 1 << (10 * (i + 1))
			t = t[:n-1]
		}
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || f <= 0 || f*float64(mult) > 1<<62 {
		return 0, fmt.Errorf("size %q: want a positive number with an optional unit K, M, G or T, such as 8G", s)
	}
	return int64(f * float64(mult)), nil
}

// FormatSize formats n bytes with a binary unit, such as "7.5G".
func FormatSize(n int64) string {
	const units = "KMGT"
	if n < 1024 {
		return fmt.Sprintf("%dB", n)
	}
	f, i := float64(n)/1024, 0
	for f >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	s := strconv.FormatFloat(f, 'f', 1, 64)
	return strings.TrimSuffix(s, ".0") + units[i:i+1]
}

// floorSize rounds n down to a whole number of the largest unit that keeps
// it at least 1, for suggesting a size that fits.
func floorSize(n int64) string {
	for _, u := range []struct {
		unit string
		size int64
	}{{"T", 1 << 40}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}} {
		if n >= u.size {
			return fmt.Sprintf("%d%s", n/u.size, u.unit)
		}
	}
	return fmt.Sprintf("%d", n)
}
