package cli

import (
	"context"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/pristinedb/pristine/api"
	"github.com/pristinedb/pristine/internal/archive"
	"github.com/pristinedb/pristine/internal/capture"
	"github.com/pristinedb/pristine/internal/catalog"
	"github.com/pristinedb/pristine/internal/diskuse"
	"github.com/pristinedb/pristine/internal/oci"
	"github.com/pristinedb/pristine/internal/pool"
	"github.com/pristinedb/pristine/internal/template"
	"github.com/pristinedb/pristine/internal/units"
)

// openBuilder opens the template builder of the root: its catalog on the
// named backend, the installed server and the global build settings.
func (g *Globals) openBuilder(ctx context.Context, backend string) (*template.Builder, error) {
	root, err := g.openRoot()
	if err != nil {
		return nil, err
	}
	st, err := template.Open(ctx, root, backend)
	if err != nil {
		return nil, err
	}
	st.NoTimezones = g.NoTimezones
	st.RAM = template.RAMOptions{Off: g.NoRAMBuild, Dir: g.RAMDir}
	if g.RAMBudget != "" {
		if st.RAM.Budget, err = units.Parse(g.RAMBudget); err != nil || st.RAM.Budget <= 0 {
			return nil, fmt.Errorf("%w: --ram-budget %q: want a size such as 512M or 4G", ErrUsage, g.RAMBudget)
		}
	}
	if !g.JSON || g.ErrIsTerminal() {
		st.Progress = func(format string, args ...any) { g.stderrf("pristine: "+format, args...) }
	}
	return st, nil
}

// inUse reports whether a pool's clones of a template exist under the root.
func inUse(st *template.Builder) func(hash string) bool {
	return func(hash string) bool {
		_, err := os.Stat(pool.Dir(st.Catalog(), &catalog.Meta{Hash: hash}))
		return err == nil
	}
}

func newTemplateCmd(g *Globals) *cobra.Command {
	cmd := &cobra.Command{Use: "template", Short: "build, list and remove templates (golden data directories)"}
	cmd.AddCommand(newTemplateBuildCmd(g), newTemplateLsCmd(g), newTemplateRmCmd(g), newTemplateGCCmd(g),
		newTemplateExportCmd(g), newTemplateImportCmd(g), newTemplatePushCmd(g), newTemplatePullCmd(g), newTemplateKeyCmd(g))
	return cmd
}

// BuildFlags are the flags of `template build`.
type BuildFlags struct {
	template.BuildOptions
	Backend       string
	LogSize       string
	ServerOptions []string // --server-option KEY=VALUE
	Password      PasswordFlags
	Cache         cacheFlags // --cache REPO: template_remote.go
	// AllowStale (--allow-stale) accepts an init command no --watch path
	// keys: the template is then rebuilt only when the command's text
	// changes, never when a file it reads does.
	AllowStale bool
	// InnoDBCompression (--innodb-compression) page-compresses every
	// InnoDB table of the template and its slots (MariaDB).
	InnoDBCompression bool
}

// keyed refuses an init command that no --watch path keys, by the rule the
// daemon applies to every client (api.TemplateRequest.Unkeyed): the
// template would be keyed by the command's text alone, and a changed
// migration would silently get the old one.
func (f *BuildFlags) keyed() error {
	req := api.TemplateRequest{RunsCode: f.InitCmd != "", KeyFiles: len(f.Watch), AllowStale: f.AllowStale}
	if !req.Unkeyed() {
		return nil
	}
	return fmt.Errorf("%w: template %s: --init-cmd runs code but no --watch names the files it reads, so the template would be keyed by the command's text alone: after a migration changes, every build would still find the old template. Pass --watch PATH (repeatable) for the migrations, seeders and fixtures it reads, or --allow-stale to accept a template that goes stale when they change (an init command that reads no file)", ErrUsage, f.Name)
}

func newTemplateBuildCmd(g *Globals) *cobra.Command {
	var f BuildFlags
	cmd := &cobra.Command{
		Use:   "build NAME [--from-sql PATH] [--init-cmd CMD]",
		Short: "build a template from SQL (file, .gz, .zst, directory or - for stdin) and/or an init command",
		Long: `Builds a golden data directory stored under a content hash of its inputs, the init
command, the server version and the profile. An unchanged template is never rebuilt.
The init command runs with DATABASE_URL, MYSQL_HOST, MYSQL_PORT, MYSQL_UNIX_PORT,
MYSQL_USER, MYSQL_PWD and MYSQL_DATABASE set for the template server.

What keys the template: the --from-sql input and the --watch paths (their names and
bytes), not what the init command does. An --init-cmd without --watch is refused: the
template would be keyed by the command's text alone, and a changed migration would
silently get the old template. Name the files it reads with --watch; --allow-stale
accepts the risk (for a command that reads no file): the template is then rebuilt only
when the command's text changes.`,
		Example: `  pristine template build app --from-sql schema.sql.zst
  pristine template build app --init-cmd './migrate up' --watch migrations/ --server-option sql-mode=STRICT_ALL_TABLES`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f.Name = args[0]
			m, built, err := RunTemplateBuild(cmd.Context(), g, f)
			if err != nil {
				return err
			}
			if g.JSON {
				return g.printJSON(map[string]any{"template": m.API(), "built": built})
			}
			verb := "built"
			if !built {
				verb = "up to date"
			}
			fmt.Fprintf(g.IO.Out, "template %s %s: %s (%s, %.1fs to build)\n", m.Name, verb, m.Hash[:12], units.Bytes(m.Bytes), m.BuildSeconds)
			return nil
		},
	}
	fl := cmd.Flags()
	f.addKeyFlags(fl)
	fl.IntVar(&f.Workers, "workers", 4, "parallel connections for loading")
	fl.BoolVar(&f.Rebuild, "rebuild", false, "build even if an identical template exists")
	fl.StringVar(&f.Backend, "backend", "auto", "copy-on-write backend: auto, btrfs, reflink or copy")
	fl.StringVar(&f.Server.DSN, "from-server", "", "capture a live server: mysql://user@host:port/ (?socket=PATH for a unix socket); the password from $"+EnvSourcePassword+", $"+EnvMySQLPassword+", --password-file or --password-prompt, never the command line; see docs/capture.md")
	fl.StringVar(&f.Password.File, "password-file", "", "with --from-server: read the source's password from the first line of this file (mode 0600)")
	fl.BoolVar(&f.Password.Prompt, "password-prompt", false, "with --from-server: ask for the source's password on the terminal")
	fl.DurationVar(&f.Server.ConnectTimeout, "source-timeout", capture.DefaultConnectTimeout, "with --from-server: longest wait to connect to the source (TCP, greeting, authentication)")
	fl.DurationVar(&f.Server.IOTimeout, "source-io-timeout", capture.DefaultIOTimeout, "with --from-server: longest wait for each read from or write to the source once connected")
	fl.StringSliceVar(&f.Server.Databases, "databases", nil, "with --from-server: the databases to capture (default: every non-system database)")
	fl.StringVar(&f.Server.Method, "method", "auto", "with --from-server: logical, physical (mariadb-backup) or auto")
	fl.DurationVar(&f.Server.LockWait, "lock-wait", 30*time.Second, "with --from-server: longest wait for the snapshot's read lock")
	fl.BoolVar(&f.Server.WithPasswords, "with-passwords", false, "with --from-server: carry the accounts' password hashes (default: the captured databases' accounts get a random password nobody knows)")
	addCacheFlags(fl, &f.Cache)
	return cmd
}

// addKeyFlags registers the flags that go into a template's content key,
// shared by template build and template key so the two never disagree.
func (f *BuildFlags) addKeyFlags(fl *pflag.FlagSet) {
	fl.StringVar(&f.FromSQL, "from-sql", "", "SQL to load: a .sql/.sql.gz/.sql.zst file, a directory of them, or - for stdin (build only)")
	fl.StringVar(&f.InitCmd, "init-cmd", "", "shell command to run against the template server (migrations, seeders)")
	fl.StringSliceVar(&f.Watch, "watch", nil, "files or directories the init command reads; their content goes into the hash (repeatable; required with --init-cmd unless --allow-stale)")
	fl.BoolVar(&f.AllowStale, "allow-stale", false, "accept an --init-cmd without --watch: the template is rebuilt only when the command's text changes, so it goes stale when a file the command reads changes")
	fl.StringVar(&f.Database, "database", "", "database to load into and hand out (default: the template name)")
	fl.IntVar(&f.DBsPerSlot, "dbs-per-slot", 1, "copies of the database inside each slot's server (InnoDB tables, no routines or triggers): fewer servers for as many leases; on MySQL, whose servers cost 5-7x MariaDB's to start, 4-8 bring 200 databases up in 1.6x-0.6x MariaDB's time with one per slot (docs/benchmarks.md)")
	fl.StringVar(&f.LogSize, "log-file-size", "48M", "innodb_log_file_size of the template and its slots")
	fl.BoolVar(&f.InnoDBCompression, "innodb-compression", false, "page-compress every InnoDB table (MariaDB: innodb-compression-default=ON, zlib; part of the content key; SHOW CREATE TABLE then shows `PAGE_COMPRESSED`='ON'): a smaller template for large schemas, for some CPU")
	fl.StringArrayVar(&f.ServerOptions, "server-option", nil, "server option KEY=VALUE for the template and its slots, part of its content key: a data setting from the allow-list of docs/security.md, \"A template is data\" (sql-mode, character-set-server, lower-case-table-names, default-time-zone, ...; repeatable; default: the stock settings of the installed server's package, docs/servers.md, \"Server defaults\")")
}

// RunTemplateBuild builds (or finds) a template.
func RunTemplateBuild(ctx context.Context, g *Globals, f BuildFlags) (*catalog.Meta, bool, error) {
	if f.Server.DSN != "" {
		// First of all, so a password in the URL leaves argv at once.
		f.Server.DSN = strings.Clone(f.Server.DSN) // argv is scrubbed in sourcePassword
		if g.ErrIsTerminal() {
			f.Server.Meter = g.IO.Err
		}
		pw, err := g.sourcePassword(f.Server.DSN, f.Password)
		if err != nil {
			return nil, false, err
		}
		f.Server.Password = pw
	}
	if err := f.keyed(); err != nil {
		return nil, false, err
	}
	st, err := g.openBuilder(ctx, f.Backend)
	if err != nil {
		return nil, false, err
	}
	if err := f.setProfile(st.Binary()); err != nil {
		return nil, false, err
	}
	if f.Cache.Repo != "" && f.FromSQL == "-" {
		return nil, false, oci.ErrCacheStdin // before stdin is read
	}
	// The one build pipeline: the key is computed (and a live source
	// probed) once, here, and the plan handed on.
	plan, err := st.Plan(ctx, f.BuildOptions)
	if err != nil {
		return nil, false, err
	}
	defer plan.Close()
	var m *catalog.Meta
	var built bool
	if f.Cache.Repo != "" {
		m, built, err = runCachedBuild(ctx, g, plan, f)
	} else {
		m, built, err = plan.Build(ctx)
	}
	if err != nil || !built {
		return m, built, err
	}
	return m, built, g.supersede(st, m)
}

func newTemplateLsCmd(g *Globals) *cobra.Command {
	return &cobra.Command{
		Use:   "ls",
		Short: "list templates",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := g.openBuilder(cmd.Context(), "auto")
			if err != nil {
				return err
			}
			all, err := st.Catalog().List()
			if err != nil {
				return err
			}
			list := catalog.APIList(all)
			for _, t := range list {
				// Measured now, from the filesystem: what compression saves.
				if u, err := diskuse.Measure(st.Catalog().DataDir(t.Hash)); err == nil {
					t.Logical, t.Physical = u.Logical, u.Physical
				}
			}
			if g.JSON {
				return g.printJSON(list)
			}
			tw := tabwriter.NewWriter(g.IO.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tHASH\tSIZE\tLOGICAL\tPHYSICAL\tDATABASES\tBACKEND\tBUILT\tLAST USED\tPARENT")
			for i, m := range all {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", lsName(m, all), m.Hash[:12], units.Bytes(m.Bytes),
					measured(list[i].Logical), measured(list[i].Physical), len(m.Databases), m.Backend,
					m.Created.Local().Format(time.DateTime), m.LastUsed.Local().Format(time.DateTime), lsParent(m, all))
			}
			return tw.Flush()
		},
	}
}

// measured formats a measured size, "-" when it could not be measured.
func measured(n int64) string {
	if n == 0 {
		return "-"
	}
	return units.Bytes(n)
}

func newTemplateRmCmd(g *Globals) *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "rm NAME|HASH...",
		Short: "remove templates",
		Example: `  pristine template rm app             # the newest build of app
  pristine template rm 5d0c1f3e9a41   # one build, by hash
  pristine template rm --force app    # even when forks of it are kept`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := g.openBuilder(cmd.Context(), "auto")
			if err != nil {
				return err
			}
			for _, ref := range args {
				m, err := st.Catalog().Get(ref)
				if err != nil {
					return err
				}
				if !force {
					if err := st.Catalog().CheckChildren(m); err != nil {
						return err
					}
				}
				if err := st.Catalog().Remove(m, inUse(st)); err != nil {
					return err
				}
				if !g.JSON {
					fmt.Fprintf(g.IO.Out, "removed template %s (%s, %s)\n", m.Name, m.Hash[:12], units.Bytes(m.Bytes))
					g.noteOlderBuilds(st, m.Name)
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "remove a template even when forks of it are kept (they keep their data)")
	return cmd
}

func newTemplateGCCmd(g *Globals) *cobra.Command {
	var maxSize string
	cmd := &cobra.Command{
		Use:   "gc --max-size SIZE",
		Short: "remove least recently used templates until the store fits in SIZE",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			limit, err := parseBytes(maxSize)
			if err != nil {
				return err
			}
			st, err := g.openBuilder(cmd.Context(), "auto")
			if err != nil {
				return err
			}
			removed, err := st.Catalog().GC(limit, inUse(st))
			if g.JSON {
				_ = g.printJSON(map[string]any{"removed": catalog.APIList(removed)})
			} else {
				for _, m := range removed {
					fmt.Fprintf(g.IO.Out, "removed template %s (%s, %s)\n", m.Name, m.Hash[:12], units.Bytes(m.Bytes))
				}
			}
			return err
		},
	}
	cmd.Flags().StringVar(&maxSize, "max-size", "", "keep at most this much, e.g. 20G (required)")
	_ = cmd.MarkFlagRequired("max-size")
	return cmd
}

func newTemplateExportCmd(g *Globals) *cobra.Command {
	var opt archive.PackOptions
	cmd := &cobra.Command{
		Use:     "export NAME|HASH > FILE",
		Short:   "write a template to stdout in pristine's archive format, to import on another runner",
		Example: `  pristine template export app > app.prsa    # then, on the other runner: pristine template import app.prsa`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if g.OutIsTerminal() {
				return fmt.Errorf("%w: export writes an archive to stdout: redirect it, e.g. pristine template export %s > %s.prsa", ErrUsage, args[0], args[0])
			}
			st, err := g.openBuilder(cmd.Context(), "auto")
			if err != nil {
				return err
			}
			m, err := st.Catalog().Get(args[0])
			if err != nil {
				return err
			}
			if g.ErrIsTerminal() {
				opt.Progress = g.IO.Err
			}
			stats, err := st.Export(cmd.Context(), m, g.IO.Out, opt)
			if err != nil {
				return err
			}
			g.stderrf("pristine: exported template %s (%s): %s in %.2fs", m.Name, m.Hash[:12], units.Bytes(stats.ArchiveBytes), stats.Elapsed.Seconds())
			return nil
		},
	}
	cmd.Flags().BoolVar(&opt.Compress, "compress", false, "compress extents with zstd")
	return cmd
}

func newTemplateImportCmd(g *Globals) *cobra.Command {
	return &cobra.Command{
		Use:   "import FILE|-",
		Short: "add a template exported on another runner (same server version) to the store",
		Long: `Adds a template written by template export (FILE, or - for standard input).
The archive carries data only: modes and owners are pristine's, and it is
staged in a private directory. The template is found by its name (pool up
--template NAME), but the content key its meta.json claims is not trusted: it
is filed under a key derived from the archive's SHA-256 and never answers
template build, which builds for itself (docs/security.md). Importing the same
archive again finds it already here.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := g.openBuilder(cmd.Context(), "auto")
			if err != nil {
				return err
			}
			in := g.IO.In
			if args[0] != "-" {
				f, err := os.Open(args[0])
				if err != nil {
					return fmt.Errorf("import template: %w", err)
				}
				defer f.Close()
				in = f
			}
			var opt archive.UnpackOptions
			if g.ErrIsTerminal() {
				opt.Progress = g.IO.Err
			}
			m, added, err := st.Import(cmd.Context(), in, opt)
			if err != nil {
				return err
			}
			if g.JSON {
				return g.printJSON(map[string]any{"template": m.API(), "imported": added})
			}
			verb := "imported"
			if !added {
				verb = "already here"
			}
			fmt.Fprintf(g.IO.Out, "template %s %s: %s (%s)\n", m.Name, verb, m.Hash[:12], units.Bytes(m.Bytes))
			return nil
		},
	}
}
