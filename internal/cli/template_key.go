package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/pristinedb/pristine/internal/mariadb"
)

// setProfile sets the server profile a build (or its key) uses on bin:
// the default, the log size, the page compression options of
// --innodb-compression and the server options of the flags (which win).
func (f *BuildFlags) setProfile(bin *mariadb.Binary) error {
	f.Profile = mariadb.DefaultProfile()
	if f.LogSize != "" {
		n, err := parseBytes(f.LogSize)
		if err != nil {
			return err
		}
		f.Profile.LogFileSize = n
	}
	own := f.ServerOptions
	if f.InnoDBCompression {
		pc, err := bin.PageCompressionOptions()
		if err != nil {
			return fmt.Errorf("%w: template build %v", ErrUsage, err)
		}
		own = append(pc, own...)
	}
	opts, err := mariadb.MergeOptions(f.Profile.Options, own)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUsage, err)
	}
	f.Profile.Options = opts
	return nil
}

func newTemplateKeyCmd(g *Globals) *cobra.Command {
	var f BuildFlags
	cmd := &cobra.Command{
		Use:   "key NAME [--from-sql PATH] [--init-cmd CMD] [--watch PATH]",
		Short: "print a template's content key without building it (for CI cache keys)",
		Long: `key prints the content hash that "template build" with the same flags would store the
template under: over the SQL, the init command, the watched files, the server version and
profile and the server options. A CI job keys its cache of "template export" by it.`,
		Example: `  pristine template key app --from-sql schema.sql --init-cmd './migrate up' --watch migrations/
  KEY=$(pristine template key app --from-sql schema.sql)   # then cache app-$KEY.prsa`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f.Name = args[0]
			key, err := RunTemplateKey(cmd.Context(), g, f)
			if err != nil {
				return err
			}
			if g.JSON {
				return g.printJSON(map[string]string{"name": f.Name, "key": key})
			}
			fmt.Fprintln(g.IO.Out, key)
			return nil
		},
	}
	f.addKeyFlags(cmd.Flags())
	return cmd
}

// RunTemplateKey computes the content key of a build without building.
func RunTemplateKey(ctx context.Context, g *Globals, f BuildFlags) (string, error) {
	if f.FromSQL == "-" {
		return "", fmt.Errorf("%w: template key cannot read standard input; save the SQL to a file and pass its path", ErrUsage)
	}
	if f.FromSQL == "" && f.InitCmd == "" {
		return "", fmt.Errorf("%w: nothing to key: pass --from-sql PATH, --init-cmd CMD, or both, as for template build", ErrUsage)
	}
	if err := f.keyed(); err != nil {
		return "", err
	}
	st, err := g.openBuilder(ctx, "auto")
	if err != nil {
		return "", err
	}
	if err := f.setProfile(st.Binary()); err != nil {
		return "", err
	}
	return st.Hash(ctx, f.BuildOptions)
}
