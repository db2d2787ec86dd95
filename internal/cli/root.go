// Package cli wires pristine's commands. Each command lives in a file of its
// own, parses its flags and calls one plain function; commands are listed
// in NewRoot, write only to the streams in Globals.IO and end in one exit
// code of exit.go's table. cli_test.go runs every command in-process.
package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
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
	// IO is where commands read and write (the process's streams in the
	// binary, buffers in tests).
	IO Stdio
}

// NewRoot builds the command tree of pristine, its commands listed here in
// the order `pristine --help` shows them. Commands write to io.
func NewRoot(io Stdio) *cobra.Command {
	g := &Globals{IO: io.orDefaults()}
	root := &cobra.Command{
		Use:           "pristine",
		Short:         "pristine copies of a real MariaDB database for every test, in milliseconds",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       "-", // --version prints versionText, worked out only when asked
	}
	cobra.AddTemplateFunc("pristineVersion", func() string { return versionText(context.Background()) })
	root.SetVersionTemplate("{{pristineVersion}}")
	AddGlobalFlags(root, g)
	root.AddGroup(&cobra.Group{ID: "use", Title: "Commands:"}, &cobra.Group{ID: "more", Title: "More commands:"})
	cobra.EnableCommandSorting = false
	// A first session's order.
	for _, c := range []*cobra.Command{
		newDemoCmd(g), newScratchCmd(g), newTemplateCmd(g), newPoolCmd(g),
		newLeaseCmd(g), newSQLCmd(g), newReleaseCmd(g), newDashboardCmd(g),
	} {
		c.GroupID = "use"
		root.AddCommand(c)
	}
	// The rest, alphabetically.
	for _, c := range []*cobra.Command{newPackCmd(g), newServeCmd(g), newUnpackCmd(g), newVerifyCmd(g)} {
		c.GroupID = "more"
		root.AddCommand(c)
	}
	// Hidden: the demo schema's SQL, and the benchmarks' old names, which
	// say where they went (pristine-bench).
	demoSQL := newDemoSQLCmd(g)
	demoSQL.Hidden = true
	root.AddCommand(demoSQL)
	root.AddCommand(movedCmds()...)
	root.SetHelpCommandGroupID("more")
	root.SetCompletionCommandGroupID("more")
	root.SetOut(g.IO.Out)
	root.SetErr(g.IO.Err)
	root.SetIn(g.IO.In)
	root.SetUsageTemplate(root.UsageTemplate() + ExitCodesHelp)
	return root
}

// AddGlobalFlags adds the flags every command shares to root, bound to g;
// pristine-bench shares them.
func AddGlobalFlags(root *cobra.Command, g *Globals) {
	root.PersistentFlags().StringVar(&g.Root, "root", "", "directory that holds everything pristine owns (default $PRISTINE_ROOT, else "+defaultRootHint()+")")
	root.PersistentFlags().BoolVar(&g.JSON, "json", false, "print machine-readable JSON on stdout")
	root.PersistentFlags().BoolVar(&g.NoTimezones, "no-timezones", false, "leave the time zone tables (mysql.time_zone*) of new base data directories empty; by default they are loaded from /usr/share/zoneinfo")
	root.PersistentFlags().BoolVar(&g.NoRAMBuild, "no-ram-build", false, "run template builds on the template store; by default a build runs its server on tmpfs when it fits and is then moved into the store")
	root.PersistentFlags().StringVar(&g.RAMDir, "ram-dir", "", "tmpfs directory template builds run in (default /dev/shm)")
	root.PersistentFlags().StringVar(&g.RAMBudget, "ram-budget", "", "most a template build may take in RAM, e.g. 2G (default: half the available memory, within what the tmpfs has free); bigger builds run on the store")
}

// Main runs pristine's command line on the process's streams and returns
// the process exit code.
func Main(args []string) int { return Execute(NewRoot(OSStdio()), args) }

// Execute runs root with args and returns the exit code of exit.go's
// table, after printing the error, if any, to root's standard error. Ctrl-C
// and SIGTERM cancel the context, so every command can stop its children
// cleanly.
func Execute(root *cobra.Command, args []string) int {
	// pristine kills servers on purpose; the driver's log of the broken
	// connections that leaves is noise. Errors reach the caller anyway.
	_ = mysql.SetLogger(&mysql.NopLogger{})
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return ExecuteContext(ctx, root, args)
}

// ExecuteContext is Execute under ctx, without signal handling: tests call it.
func ExecuteContext(ctx context.Context, root *cobra.Command, args []string) int {
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) { // the command ran said why it failed
		fmt.Fprintf(root.ErrOrStderr(), "%s: %v\n", root.Name(), err)
	}
	return ExitCode(err)
}

func defaultRootHint() string {
	if os.Geteuid() == 0 {
		return "/var/lib/pristine"
	}
	return "~/.local/share/pristine"
}
