package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/pristinedb/pristine/api"
	"github.com/pristinedb/pristine/client"
	"github.com/pristinedb/pristine/internal/template"
	"github.com/pristinedb/pristine/internal/verify"
)

// VerifyFlags are the flags of `pristine verify`.
type VerifyFlags struct {
	SchemaMap   []string
	IgnoreUsers []string
	SkipData    bool
	SkipUsers   bool
	AllUsers    bool
	Passwords   bool
}

func newVerifyCmd(g *Globals) *cobra.Command {
	var f VerifyFlags
	cmd := &cobra.Command{
		Use:   "verify SOURCE TARGET",
		Short: "prove a clone (or a template) is its source, object for object",
		Long: `Compares two servers object by object: databases (character set, collation),
tables (engine, row format, every column, index, foreign key, CHECK constraint,
partition, AUTO_INCREMENT), views, triggers, procedures, functions, events,
sequences, users, roles and grants, and every table's rows by checksum.

SOURCE and TARGET are each a URL (mysql://user:password@host:port/db, with
?socket=PATH for a unix socket), a lease id, or a template name (started on a
private clone for the comparison). A copy under another schema name is
compared with --schema-map app=app_2, or by itself when each side names or
holds one schema.

Exit status: 0 when the target is the source, 1 on any difference or error,
2 on a usage error.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := RunVerify(cmd.Context(), g, args[0], args[1], f)
			if err != nil {
				return err
			}
			if g.JSON {
				err = g.printJSON(r)
			} else {
				err = verify.WriteText(g.IO.Out, r)
			}
			if err != nil {
				return err
			}
			if !r.Clean() {
				return fmt.Errorf("%w: %d differences", verify.ErrDifferent, len(r.Diffs))
			}
			return nil
		},
	}
	cmd.Flags().StringSliceVar(&f.SchemaMap, "schema-map", nil, "compare schema SOURCE with TARGET (SOURCE=TARGET, repeatable or comma-separated)")
	cmd.Flags().StringSliceVar(&f.IgnoreUsers, "ignore-user", nil, "leave accounts out (user@host, * and ? match anything)")
	cmd.Flags().BoolVar(&f.SkipData, "skip-data", false, "compare definitions only, not rows")
	cmd.Flags().BoolVar(&f.SkipUsers, "skip-users", false, "leave users, roles and grants out")
	cmd.Flags().BoolVar(&f.Passwords, "with-passwords", false, "compare the accounts' authentication too (password hashes, plugins); a capture carries it only when built --with-passwords")
	cmd.Flags().BoolVar(&f.AllUsers, "all-users", false, "compare every account but the system's, not only those of the compared schemas (definers, privilege holders and their roles)")
	return cmd
}

// RunVerify connects to both sides, decides which schemas to pair and
// compares them.
func RunVerify(ctx context.Context, g *Globals, source, target string, f VerifyFlags) (*verify.Report, error) {
	explicit, err := verify.ParsePairs(f.SchemaMap)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUsage, err)
	}
	op := verify.Opener{
		Builder: func(ctx context.Context) (*template.Builder, error) { return g.openBuilder(ctx, "auto") },
		Lease:   func(ctx context.Context, id string) (string, string, string, error) { return findLease(ctx, g, id) },
		Admin: func() (string, error) {
			root, err := g.openRoot()
			if err != nil {
				return "", err
			}
			return root.AdminSecret()
		},
	}
	src, err := op.Open(ctx, source)
	if err != nil {
		return nil, fmt.Errorf("verify: source: %w", err)
	}
	defer src.Close()
	dst, err := op.Open(ctx, target)
	if err != nil {
		return nil, fmt.Errorf("verify: target: %w", err)
	}
	defer dst.Close()
	pairs, err := verify.ResolvePairs(ctx, src.DB, dst.DB, src.Database, dst.Database, explicit)
	if err != nil {
		return nil, fmt.Errorf("verify: %w", err)
	}
	return verify.Compare(ctx, src.Side, dst.Side, verify.Options{Pairs: pairs, IgnoreUsers: f.IgnoreUsers, SkipData: f.SkipData, SkipUsers: f.SkipUsers, AllUsers: f.AllUsers, Passwords: f.Passwords})
}

// findLease asks the root's daemon for a lease held now. The list carries no
// credentials: verify connects as root over the slot's socket.
func findLease(ctx context.Context, g *Globals, id string) (socket, database, label string, err error) {
	root, err := g.openRoot()
	if err != nil {
		return "", "", "", err
	}
	leases, err := client.New(api.SocketPath(root.Path)).Leases(ctx)
	if err != nil {
		return "", "", "", err
	}
	for _, l := range leases {
		if l.ID == id {
			return l.Socket, l.Database, fmt.Sprintf("lease %s (%s, slot %d, database %s)", l.ID, l.Template, l.Slot, l.Database), nil
		}
	}
	return "", "", "", fmt.Errorf("not held now: see `pristine pool status` for the leases held")
}
