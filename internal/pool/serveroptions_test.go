package pool_test

import (
	"context"
	"testing"

	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/mariadb/mariadbtest"
	"github.com/pristinedb/pristine/internal/pool"
	"github.com/pristinedb/pristine/internal/template"
	"github.com/pristinedb/pristine/internal/template/templatetest"
)

// TestSlotsRunTheTemplatesServerOptions: slots start with the options their
// template was built with: the stock server's character set and collation
// by default, or what --server-option said.
func TestSlotsRunTheTemplatesServerOptions(t *testing.T) {
	st := templatetest.NewBuilder(t, "auto")
	for _, tc := range []struct {
		name string
		opts []string
		want string
	}{
		{"default", nil, mariadbtest.StockCharset(st.Binary())},
		{"latin1", []string{"character-set-server=latin1", "collation-server=latin1_swedish_ci"}, "latin1 latin1_swedish_ci"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prof := mariadb.DefaultProfile()
			var err error
			if prof.Options, err = mariadb.MergeOptions(prof.Options, tc.opts); err != nil {
				t.Fatal(err)
			}
			m := templatetest.Build(t, st, "cs_"+tc.name, "CREATE TABLE t (s VARCHAR(10));\n", template.BuildOptions{Profile: prof})
			// The daemon starts pools with the default profile: the
			// template's options must win.
			p, err := pool.Up(context.Background(), st.Catalog(), st.Binary(), m, pool.Options{Size: 1, Profile: mariadb.DefaultProfile()})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Down(context.Background())
			var got string
			if err := open(t, lease(t, p)).QueryRow("SELECT CONCAT(@@character_set_server, ' ', @@collation_server)").Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("slot server charset = %q, want %q", got, tc.want)
			}
		})
	}
}
