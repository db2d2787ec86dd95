package sqlrows_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/pristinedb/pristine/internal/mariadb/mariadbtest"
	"github.com/pristinedb/pristine/internal/sqlrows"
)

func TestEach(t *testing.T) {
	db := mariadbtest.Open(t, mariadbtest.Start(t), "")
	ctx := context.Background()
	const q = "SELECT 1 AS n, 'a' AS s, NULL AS z UNION ALL SELECT 2, NULL, 3.5"
	for _, tc := range []struct {
		null string
		want [][]string
	}{
		{"", [][]string{{"1", "a", ""}, {"2", "", "3.5"}}},
		{"NULL", [][]string{{"1", "a", "NULL"}, {"2", "NULL", "3.5"}}},
	} {
		var got [][]string
		err := sqlrows.Each(ctx, db, q, tc.null, func(cols, row []string) error {
			if !slices.Equal(cols, []string{"n", "s", "z"}) {
				t.Errorf("columns %v", cols)
			}
			got = append(got, row)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.EqualFunc(got, tc.want, slices.Equal) {
			t.Errorf("null %q: rows %q, want %q", tc.null, got, tc.want)
		}
	}

	stop := errors.New("stop")
	n := 0
	err := sqlrows.Each(ctx, db, q, "", func(_, _ []string) error { n++; return stop })
	if err != stop || n != 1 {
		t.Errorf("f's error: got %v after %d rows, want it as it is after 1", err, n)
	}

	err = sqlrows.Each(ctx, db, "SELECT * FROM no_such_db.t", "", func(_, _ []string) error { return nil })
	if err == nil {
		t.Error("a query on a missing table succeeded")
	}
}
