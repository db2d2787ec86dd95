package scratch

import (
	"fmt"
	"strconv"
	"strings"
)

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
