// Command pristine-bench measures pristine on the machine it runs on:
// bench, soak, bench-archive, bench-capture, bench-fleet, overhead and fork, kept
// out of the product binary. All logic lives in internal/bench; this file
// only hands control to its command tree.
package main

import (
	"os"

	"github.com/pristinedb/pristine/internal/bench/benchcli"
)

func main() {
	os.Exit(benchcli.Main(os.Args[1:]))
}
