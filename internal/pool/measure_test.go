package pool_test

import (
	"context"
	"database/sql"
	"os"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/pool"
	"github.com/pristinedb/pristine/internal/template"
	"github.com/pristinedb/pristine/internal/template/templatetest"
)

// TestMeasureCommitDurability measures what innodb_flush_log_at_trx_commit
// =2 (slots) costs against =0 on a btrfs scratch: the time to bring up 8
// slots, and 8 leases doing 2,000 single-row autocommit INSERTs each at
// once. It only reports; set PRISTINE_MEASURE_COMMIT=1 to run it.
func TestMeasureCommitDurability(t *testing.T) {
	if os.Getenv("PRISTINE_MEASURE_COMMIT") == "" {
		t.Skip("a measurement: set PRISTINE_MEASURE_COMMIT=1 to run it")
	}
	st := templatetest.NewScratchBuilder(t, "btrfs", 2<<30)
	m := templatetest.Build(t, st, "app", schema, template.BuildOptions{})
	const slots, rows, rounds = 8, 2000, 3
	results := map[bool][][2]float64{}
	for r := 0; r < rounds; r++ {
		for _, lazy := range []bool{true, false} {
			prof := mariadb.DefaultProfile()
			prof.LazyCommit = lazy
			start := time.Now()
			p, err := pool.Up(context.Background(), st.Catalog(), st.Binary(), m, pool.Options{Size: slots, Profile: prof})
			if err != nil {
				t.Fatal(err)
			}
			up := time.Since(start).Seconds()
			var leases []*pool.Lease
			for i := 0; i < slots; i++ {
				leases = append(leases, lease(t, p))
			}
			start = time.Now()
			var wg sync.WaitGroup
			for _, l := range leases {
				wg.Add(1)
				go func(l *pool.Lease) {
					defer wg.Done()
					db, err := sql.Open("mysql", l.DSN)
					if err != nil {
						t.Error(err)
						return
					}
					defer db.Close()
					db.SetMaxOpenConns(1)
					if _, err := db.Exec("CREATE TABLE w (id INT PRIMARY KEY, v VARCHAR(64))"); err != nil {
						t.Error(err)
						return
					}
					for i := 0; i < rows; i++ {
						if _, err := db.Exec("INSERT INTO w VALUES (?, SHA2(?, 256))", i, i); err != nil {
							t.Error(err)
							return
						}
					}
				}(l)
			}
			wg.Wait()
			writes := time.Since(start).Seconds()
			p.Down(context.Background())
			results[lazy] = append(results[lazy], [2]float64{up, writes})
			t.Logf("round %d flush_log_at_trx_commit=%s: pool up of %d slots %.2fs; %d x %d autocommit INSERTs %.2fs (%.0f commits/s)",
				r, map[bool]string{true: "0", false: "2"}[lazy], slots, up, slots, rows, writes, slots*rows/writes)
		}
	}
	med := func(v [][2]float64, k int) float64 {
		s := make([]float64, len(v))
		for i := range v {
			s[i] = v[i][k]
		}
		sort.Float64s(s)
		return s[len(s)/2]
	}
	for _, k := range []int{0, 1} {
		t.Logf("median %s: =0 %.2fs, =2 %.2fs, ratio %.2f", []string{"pool up", "writes"}[k],
			med(results[true], k), med(results[false], k), med(results[false], k)/med(results[true], k))
	}
}
