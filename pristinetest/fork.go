package pristinetest

import (
	"context"
	"testing"

	"github.com/pristinedb/pristine/client"
)

// Fork makes template name from db's current state (everything committed
// on it so far) and returns the options that lease it with New: load
// expensive fixtures once into one test's database, fork it, and every
// later test gets a copy of that state.
//
//	seed := pristinetest.New(t, base...)
//	loadFixtures(seed.DB)
//	fixtures := pristinetest.Fork(t, seed, "app-fixtures", fixturesKey, base...)
//	db := pristinetest.New(t, fixtures...)
//
// key (e.g. client.ContentKey of the fixture files) files the fork under
// its parent's key and this one: a later run with the same key gets the
// fork made before at once. opts are New's options (Client, PoolSize,
// ...); the returned ones name the fork. db stays leased and usable.
func Fork(t testing.TB, db *DB, name, key string, opts ...Option) []Option {
	t.Helper()
	o := config{}
	for _, f := range opts {
		f(&o)
	}
	c := o.client
	if c == nil {
		var err error
		if c, err = client.FromEnv(); err != nil {
			t.Fatalf("pristinetest: %v", err)
		}
	}
	a, err := c.Fork(context.Background(), db.Lease.ID, name, key)
	if err != nil {
		t.Fatalf("pristinetest: fork lease %s as %s: %v", db.Lease.ID, name, err)
	}
	hash := a.Template.Hash
	return append(append([]Option(nil), opts...), Client(c), Template(name), func(o *config) { o.forked = hash })
}
