package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// movedToBench are the benchmark commands that pristine carried until they
// moved into their own binary, pristine-bench (cmd/pristine-bench): the
// product binary carries no benchmark code.
var movedToBench = []string{"bench", "bench-archive", "bench-capture", "bench-fleet", "soak"}

// movedCmds are hidden stand-ins for movedToBench: each says where its
// command went and exits with ExitBadInput.
func movedCmds() []*cobra.Command {
	var cmds []*cobra.Command
	for _, name := range movedToBench {
		cmds = append(cmds, &cobra.Command{
			Use:                name,
			Hidden:             true,
			DisableFlagParsing: true,
			RunE: func(cmd *cobra.Command, args []string) error {
				return fmt.Errorf("%w: `pristine %s` moved to its own binary: run `pristine-bench %s` (scripts/build.sh builds bin/pristine-bench beside bin/pristine)",
					ErrUsage, name, strings.TrimSpace(name+" "+strings.Join(args, " ")))
			},
		})
	}
	return cmds
}
