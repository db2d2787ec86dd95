package stats

import (
	"strings"
	"testing"
)

func TestQuantile(t *testing.T) {
	for _, tc := range []struct {
		v    []float64
		q    float64
		want float64
	}{
		{nil, 0.5, 0},
		{[]float64{3}, 0.5, 3},
		{[]float64{3, 1, 2}, 0.5, 2},
		{[]float64{4, 1, 3, 2}, 0.5, 3}, // the upper middle
		{[]float64{5, 1, 4, 2, 3}, 0, 1},
		{[]float64{5, 1, 4, 2, 3}, 0.99, 5},
		{[]float64{5, 1, 4, 2, 3}, 1, 5},
	} {
		if got := Quantile(tc.v, tc.q); got != tc.want {
			t.Errorf("Quantile(%v, %v) = %v, want %v", tc.v, tc.q, got, tc.want)
		}
	}
	v := []float64{3, 1, 2}
	if got := Median(v); got != 2 || v[0] != 3 {
		t.Errorf("Median(%v) = %v, and must not sort its argument", v, got)
	}
}

func TestLoadAverage(t *testing.T) {
	got := LoadAverage()
	if f := strings.Fields(got); len(f) != 3 {
		t.Errorf("LoadAverage() = %q, want three figures", got)
	}
}
