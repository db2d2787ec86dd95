package catalog_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pristinedb/pristine/internal/catalog"
)

// forkOf publishes a template of name and records parent as its parent,
// as a fork does.
func forkOf(t *testing.T, c *catalog.Catalog, name string, parent *catalog.Meta, created time.Time) *catalog.Meta {
	t.Helper()
	m := publish(t, c, name, 4096, created)
	m.Parent, m.ParentName = parent.Hash, parent.Name
	if err := c.Touch(m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestLineage: a chain app <- fixtures <- scenario. Removing a parent is
// refused while a fork of it is kept, naming the forks and --force; gc
// removes the chain leaf first, even when the parent was used least
// recently, and all of it when it must; a rebuild of a parent's name keeps
// the older build its forks came from.
func TestLineage(t *testing.T) {
	c := newCatalog(t)
	old := time.Now().Add(-time.Hour)
	app := publish(t, c, "app", 4096, old)
	fixtures := forkOf(t, c, "fixtures", app, old.Add(time.Minute))
	scenario := forkOf(t, c, "scenario", fixtures, old.Add(2*time.Minute))
	if kids, err := c.Children(app.Hash); err != nil || len(kids) != 1 || kids[0].Hash != fixtures.Hash {
		t.Fatalf("children of app: %v, %v", kids, err)
	}
	err := c.CheckChildren(fixtures)
	if !errors.Is(err, catalog.ErrHasChildren) || !strings.Contains(err.Error(), "scenario") || !strings.Contains(err.Error(), "--force") {
		t.Errorf("removing fixtures: %v, want a refusal naming scenario and --force", err)
	}
	if err := c.CheckChildren(scenario); err != nil {
		t.Errorf("removing the leaf: %v", err)
	}

	// A rebuild of app keeps the build fixtures was forked from.
	rebuilt := publish(t, c, "app", 4096, time.Now())
	removed, kept, err := c.Supersede(rebuilt, nil)
	if err != nil || len(removed) != 0 || len(kept) != 1 || kept[0].Hash != app.Hash {
		t.Errorf("supersede app: removed %v kept %v, %v; want the forked build kept", removed, kept, err)
	}
	if err := c.Remove(rebuilt, nil); err != nil {
		t.Fatal(err)
	}

	all, err := c.List()
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, m := range all {
		total += m.Bytes
	}
	// app is the least recently used; one template has to go: the leaf.
	gone, err := c.GC(total-1, nil)
	if err != nil || len(gone) != 1 || gone[0].Hash != scenario.Hash {
		t.Fatalf("gc of one template: %v, %v; want scenario (the leaf)", names(gone), err)
	}
	gone, err = c.GC(0, nil)
	if err != nil || strings.Join(names(gone), ",") != "fixtures,app" {
		t.Errorf("gc of everything: %v, %v; want fixtures, then app", names(gone), err)
	}
}

func names(ms []*catalog.Meta) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Name)
	}
	return out
}
