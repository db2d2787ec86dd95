package bench

import (
	"strings"
	"testing"
)

// TestForkMarkdown: the report names both templates' p50s, their ratio,
// and both lease loops' rates with their ratio.
func TestForkMarkdown(t *testing.T) {
	rep := &ForkReport{Server: "10.11", Backend: "btrfs", Cores: 2, LoadBefore: "1.0", LoadAfter: "2.0",
		Small:   ForkTimes{Template: "fork-demo", Scale: 1, Bytes: 110e6, Forks: 2, DaemonP50S: 0.4, WallP50S: 0.41, DaemonS: []float64{0.4, 0.45}},
		Large:   ForkTimes{Template: "fork-demo-large", Scale: 10, Bytes: 1100e6, Forks: 2, DaemonP50S: 0.44, WallP50S: 0.45, DaemonS: []float64{0.44, 0.5}},
		FromSQL: &SoakResult{Clients: 4, Cycles: 400, PoolSize: 8, LeasesPerSec: 30},
		Fork:    &SoakResult{Clients: 4, Cycles: 400, PoolSize: 8, LeasesPerSec: 29}}
	rep.Ratio = ratioOf(rep.Large.DaemonP50S, rep.Small.DaemonP50S)
	rep.LeaseRatio = ratioOf(rep.Fork.LeasesPerSec, rep.FromSQL.LeasesPerSec)
	var b strings.Builder
	if err := ForkMarkdown(&b, rep); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| fork-demo | 1 | 110 MB | 2 | 0.400 s | 0.410 s | 0.400, 0.450 s |",
		"| fork-demo-large | 10 | 1100 MB |", "large / small fork p50: 1.10", "| 30.0 |", "| 29.0 |",
		"fork / SQL template leases/s: 0.97", "load average 1.0 before, 2.0 after"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, b.String())
		}
	}
	if ratioOf(1, 0) != 0 {
		t.Error("a ratio to nothing is not 0")
	}
}
