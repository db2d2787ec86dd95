// Package units reads and prints sizes for people: "8G" in, "1.5 GiB" out.
package units

import (
	"fmt"
	"strconv"
	"strings"
)

// Bytes prints a byte count with a binary unit, e.g. "1.5 GiB".
func Bytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	f, u := float64(n), 0
	for f >= unit && u < 6 {
		f /= unit
		u++
	}
	return fmt.Sprintf("%.1f %ciB", f, "KMGTPE"[u-1])
}

// Parse reads a size such as 512M, 8G, 1.5GiB or 1048576.
func Parse(s string) (int64, error) {
	t := strings.TrimSpace(strings.ToUpper(s))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "IB"), "B")
	mult := int64(1)
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'K':
			mult = 1 << 10
		case 'M':
			mult = 1 << 20
		case 'G':
			mult = 1 << 30
		case 'T':
			mult = 1 << 40
		}
		if mult > 1 {
			t = t[:n-1]
		}
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || f < 0 {
		return 0, fmt.Errorf("size %q: use a number with an optional K, M, G or T suffix, e.g. 8G", s)
	}
	return int64(f * float64(mult)), nil
}
