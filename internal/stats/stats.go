// Package stats holds the figures every measurement reports the same way
// (the benchmarks of internal/bench and `pristine demo`, internal/demorun):
// the median and quantiles of its runs, and the machine's load average
// around them.
package stats

import (
	"os"
	"sort"
	"strings"
)

// Quantile is the value at fraction q (0 to 1) of v sorted, without
// interpolation; 0 for no values. v is left as it is.
func Quantile(v []float64, q float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	i := int(q * float64(len(s)))
	if i >= len(s) {
		i = len(s) - 1
	}
	return s[i]
}

// Median is the middle value of v (the upper of the two middle ones); 0
// for no values. v is left as it is.
func Median(v []float64) float64 { return Quantile(v, 0.5) }

// LoadAverage is the 1, 5 and 15 minute load averages from /proc/loadavg,
// e.g. "0.52 0.61 0.70", or "" where they cannot be read.
func LoadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}
