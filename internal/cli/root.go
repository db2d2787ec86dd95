// Package cli wires pristine's commands. Each command lives in a file of its
// own, parses its flags and calls one plain function that tests call too.
package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"sort"
	"syscall"

	"github.com/go-sql-driver/mysql"
	"github.com/spf13/cobra"
)

// Globals are the flags every command shares.
type Globals struct {
	Root string // --root or PRISTINE_ROOT
	JSON bool   // --json: machine-readable output on stdout
	// NoTimezones (--no-timezones): base data directories without time
	// zone tables.
	NoTimezones bool
	// NoRAMBuild, RAMDir and RAMBudget (--no-ram-build, --ram-dir,
	// --ram-budget) say whether and where template builds run in RAM.
	NoRAMBuild bool
	RAMDir     string
	RAMBudget  string
}

// commands holds the constructors of the top-level commands; each command file
// adds its own in an init function.
var commands []func(g *Globals) *cobra.Command

func register(f func(g *Globals) *cobra.Command) { commands = append(commands, f) }

// NewRoot builds the command tree.
func NewRoot() *cobra.Command {
	g := &Globals{}
	root := &cobra.Command{
		Use:           "pristine",
		Short:         "pristine copies of a real MariaDB database for every test, in milliseconds",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       "-", // --version prints versionText, worked out only when asked
	}
	cobra.AddTemplateFunc("pristineVersion", func() string { return versionText(context.Background()) })
	root.SetVersionTemplate("{{pristineVersion}}")
	root.PersistentFlags().StringVar(&g.Root, "root", "", "directory that holds everything pristine owns (default $PRISTINE_ROOT, else "+defaultRootHint()+")")
	root.PersistentFlags().BoolVar(&g.JSON, "json", false, "print machine-readable JSON on stdout")
	root.PersistentFlags().BoolVar(&g.NoTimezones, "no-timezones", false, "leave the time zone tables (mysql.time_zone*) of new base data directories empty; by default they are loaded from /usr/share/zoneinfo")
	root.PersistentFlags().BoolVar(&g.NoRAMBuild, "no-ram-build", false, "run template builds on the template store; by default a build runs its server on tmpfs when it fits and is then moved into the store")
	root.PersistentFlags().StringVar(&g.RAMDir, "ram-dir", "", "tmpfs directory template builds run in (default /dev/shm)")
	root.PersistentFlags().StringVar(&g.RAMBudget, "ram-budget", "", "most a template build may take in RAM, e.g. 2G (default: half the available memory, within what the tmpfs has free); bigger builds run on the store")
	root.AddGroup(&cobra.Group{ID: "use", Title: "Commands:"}, &cobra.Group{ID: "more", Title: "More commands:"})
	var cmds []*cobra.Command
	for _, f := range commands {
		cmds = append(cmds, f(g))
	}
	// A first session's order, then the rest alphabetically.
	cobra.EnableCommandSorting = false
	sort.SliceStable(cmds, func(i, j int) bool {
		ri, rj := slices.Index(userOrder, cmds[i].Name()), slices.Index(userOrder, cmds[j].Name())
		if ri < 0 {
			ri = len(userOrder)
		}
		if rj < 0 {
			rj = len(userOrder)
		}
		return ri < rj || (ri == rj && cmds[i].Name() < cmds[j].Name())
	})
	for _, c := range cmds {
		switch {
		case developerCommands[c.Name()]:
			c.Hidden = true // measuring pristine itself: see docs/benchmarks.md
		case slices.Contains(userOrder, c.Name()):
			c.GroupID = "use"
		default:
			c.GroupID = "more"
		}
		root.AddCommand(c)
	}
	root.SetHelpCommandGroupID("more")
	root.SetCompletionCommandGroupID("more")
	return root
}

// userOrder are the commands listed first by `pristine --help`, in the order of a
// first session; developerCommands (benchmarks of pristine itself) are
// hidden from it.
var (
	userOrder         = []string{"demo", "scratch", "template", "pool", "lease", "sql", "release", "dashboard"}
	developerCommands = map[string]bool{"bench-archive": true, "bench-capture": true, "demo-sql": true, "soak": true}
)

// Main runs the command line and returns the process exit code. Ctrl-C and
// SIGTERM cancel the context, so every command can stop its children cleanly.
func Main(args []string) int {
	// pristine kills servers on purpose; the driver's log of the broken
	// connections that leaves is noise. Errors reach the caller anyway.
	_ = mysql.SetLogger(&mysql.NopLogger{})
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := NewRoot()
	root.SetArgs(args)
	if err := root.ExecuteContext(ctx); err != nil {
		var exitErr *exec.ExitError
		if !errors.As(err, &exitErr) { // the command ran said why it failed
			fmt.Fprintf(os.Stderr, "pristine: %v\n", err)
		}
		return exitCode(err)
	}
	return 0
}

// exitCode maps errors to exit codes in one place: 2 for usage errors, 130 for
// an interrupted command, 1 for everything else.
func exitCode(err error) int {
	var exitErr *exec.ExitError
	switch {
	case errors.Is(err, context.Canceled):
		return 130
	case errors.Is(err, errUsage):
		return 2
	case errors.As(err, &exitErr):
		return exitErr.ExitCode() // a command pristine ran (pristine sql)
	default:
		return 1
	}
}

var errUsage = errors.New("usage")

func defaultRootHint() string {
	if os.Geteuid() == 0 {
		return "/var/lib/pristine"
	}
	return "~/.local/share/pristine"
}
