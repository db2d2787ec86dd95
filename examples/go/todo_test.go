package todo_test

import (
	"context"
	"errors"
	"testing"

	"github.com/pristinedb/pristine/client"
	todo "github.com/pristinedb/pristine/examples/go"
	"github.com/pristinedb/pristine/pristinetest"
)

// newDB gives a test its own database, migrated once for all tests (and all
// runs, until a file under migrations/ changes).
func newDB(t *testing.T) *pristinetest.DB {
	c, err := client.FromEnv()
	if err == nil {
		err = c.Health(context.Background())
	}
	if errors.Is(err, client.ErrNoDaemon) {
		t.Skipf("%v (see examples/README.md)", err)
	}
	return pristinetest.New(t,
		pristinetest.Template("go-example"),
		pristinetest.Files("migrations"),
		pristinetest.Migrate(todo.Migrate),
		pristinetest.PoolSize(4),
		pristinetest.KeepOnFailure(),
	)
}

func TestAddThenOpen(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ctx := context.Background()
	if _, err := todo.Add(ctx, db.DB, "inbox", "write tests"); err != nil {
		t.Fatal(err)
	}
	if n, err := todo.Open(ctx, db.DB, "inbox"); err != nil || n != 2 {
		t.Fatalf("open in inbox: %d %v, want 2", n, err)
	}
}

func TestFinish(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ctx := context.Background()
	id, err := todo.Add(ctx, db.DB, "groceries", "eggs")
	if err != nil {
		t.Fatal(err)
	}
	if err := todo.Finish(ctx, db.DB, id); err != nil {
		t.Fatal(err)
	}
	if n, err := todo.Open(ctx, db.DB, "groceries"); err != nil || n != 2 {
		t.Fatalf("open in groceries: %d %v, want 2", n, err)
	}
}

func TestEveryTestStartsFromTheSeed(t *testing.T) {
	for _, list := range []string{"inbox", "groceries", "inbox", "groceries"} {
		t.Run(list, func(t *testing.T) {
			t.Parallel()
			db := newDB(t)
			want := map[string]int{"inbox": 1, "groceries": 2}[list]
			if n, err := todo.Open(context.Background(), db.DB, list); err != nil || n != want {
				t.Fatalf("open in %s: %d %v, want the seed's %d", list, n, err, want)
			}
			if _, err := db.Exec("DELETE FROM todos"); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestUnknownList(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	if _, err := todo.Add(context.Background(), db.DB, "nope", "x"); err == nil {
		t.Fatal("adding to a missing list succeeded")
	}
}
