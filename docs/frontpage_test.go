package docs

import (
	"testing"

	"github.com/pristinedb/pristine/internal/bench"
)

// TestFrontPageIsRendered: the README's sample output, the summary table
// that opens benchmarks.md and its method comparison are exactly what
// `pristine-bench front-page` renders from the saved runs their BEGIN
// lines name (docs/runs/*.json, docs/bench/*/bench.json). A figure edited by hand,
// or a saved run changed without rendering again, fails here.
func TestFrontPageIsRendered(t *testing.T) {
	for _, name := range []string{bench.ReadmeBlock, bench.SummaryBlock, bench.BenchRunsBlock} {
		if err := bench.CheckBlock("..", name); err != nil {
			t.Error(err)
		}
	}
}
