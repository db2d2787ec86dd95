package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/pristinedb/pristine/internal/demo"
)

func newDemoSQLCmd(g *Globals) *cobra.Command {
	var opt demo.Options
	cmd := &cobra.Command{
		Use:   "demo-sql",
		Short: "write the SQL of the demo schema (51 tables, about 110 MB once loaded) to stdout",
		Long: `Write the SQL of the demo schema to stdout: 51 InnoDB tables of a shop with
foreign keys and 1 to 4 secondary indexes each, filled from MariaDB's sequence
engine, about 110 MB of data and indexes at scale 1. It runs in the current
database:

  pristine demo-sql | mariadb shop
  pristine template build demo --from-sql <(pristine demo-sql --scale 10)
  pristine demo-sql --mysql | mysql shop      # MySQL 8.0.30 and later`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if opt.Scale <= 0 || opt.Tables < 1 {
				return fmt.Errorf("%w: --scale must be positive and --tables at least 1", ErrUsage)
			}
			return demo.Write(g.IO.Out, opt)
		},
	}
	cmd.Flags().Float64Var(&opt.Scale, "scale", 1, "multiply every table's row count by this")
	cmd.Flags().IntVar(&opt.Tables, "tables", demo.DefaultTables, "number of tables; more than 51 repeats the schema with fewer rows per table")
	cmd.Flags().BoolVar(&opt.MySQL, "mysql", false, "MySQL's dialect: rows from a helper table instead of MariaDB's sequence engine, SHA2 for hashes")
	return cmd
}
