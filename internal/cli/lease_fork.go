package cli

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newLeaseForkCmd(g *Globals) *cobra.Command {
	var name, key string
	cmd := &cobra.Command{
		Use:   "fork ID --as NAME [--key KEY]",
		Short: "make a template from a lease's current state; the lease goes on",
		Long: `Make template NAME from lease ID's current state: everything committed
before the fork starts. The lease and its connections go on. Lease the
fork like any template (pool up --template NAME).

With --key (e.g. a hash of the fixture files), the fork is filed under its
parent template's key and KEY: a later fork of a lease of the same
template with the same key returns the template made before at once.`,
		Example: `  pristine lease fork 3f9c2a --as app-fixtures --key "$(sha256sum fixtures/*.json | sha256sum | cut -c1-16)"`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if name == "" {
				return fmt.Errorf("%w: --as NAME is required: the new template's name", ErrUsage)
			}
			c, _, err := g.daemon(cmd.Context(), false)
			if err != nil {
				return err
			}
			a, err := c.Fork(cmd.Context(), args[0], name, key)
			if err != nil {
				return err
			}
			if g.JSON {
				return g.printJSON(a)
			}
			verb := "forked"
			if !a.Built {
				verb = "found the fork with this key:"
			}
			fmt.Fprintf(g.IO.Out, "%s template %s (%s) from lease %s of %s in %.2fs\n", verb, a.Template.Name, a.Template.Hash[:12], args[0], a.Template.ParentName, a.Seconds)
			return nil
		},
	}
	cmd.Flags().StringVar(&name, "as", "", "the new template's name (required)")
	cmd.Flags().StringVar(&key, "key", "", "file the fork under its parent's key and this one, so the same key finds it again")
	return cmd
}
