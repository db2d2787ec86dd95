// Package template builds templates: golden MariaDB data directories made
// by loading SQL (files, a directory, stdin), running an init command, or
// capturing a live server, then stopped cleanly so every clone starts from
// the same bytes. A build stages into a catalog.Catalog under the content
// key of its inputs (catalog.Key), so an unchanged template is never
// rebuilt, and publishes there; pools clone what the catalog holds.
//
// The Builder also drives the builds a client runs itself (Begin, Session),
// starts servers on private clones of a template (Start, Running), and
// moves templates between runners (Export, Import: an import re-keys the
// archive's accounts on a private server before anything serves it). It
// takes the catalog and the server binary explicitly; it never reads a
// terminal.
package template

import (
	"context"
	"fmt"
	"os"
	"sync"

	"github.com/pristinedb/pristine/internal/catalog"
	"github.com/pristinedb/pristine/internal/cow"
	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/rootdir"
	"github.com/pristinedb/pristine/internal/svcuser"
)

// Builder builds templates into a catalog with a server binary.
type Builder struct {
	cat *catalog.Catalog
	bin *mariadb.Binary
	// Progress receives one line per step of long work; nil means quiet.
	Progress func(format string, args ...any)
	// NoTimezones leaves the base data directory's time zone tables empty
	// (by default they are loaded: timezones.go).
	NoTimezones bool
	// zoneinfo is where the time zone files are read from: ZoneinfoDir
	// unless a test names another.
	zoneinfo string
	// RAM says where and whether builds run their server in RAM (ram.go).
	RAM RAMOptions
	// ids are the server ids of the data directories the builder's
	// servers run on (ids.go).
	idMu sync.Mutex
	ids  map[string]*svcuser.Claimed
	// ram are the RAM staging directories of builds in progress, by the
	// catalog directory each build is staged in (guarded by idMu).
	ram map[string]*ramStage
}

// NewBuilder returns a builder that makes templates in cat with the server
// bin; servers it starts get cat's admin secret as root's password.
func NewBuilder(cat *catalog.Catalog, bin *mariadb.Binary) *Builder {
	return &Builder{cat: cat, bin: bin}
}

// Open opens the catalog of root on the backend chosen by name ("auto"
// detects) and returns a builder for it with the installed server.
func Open(ctx context.Context, root *rootdir.Root, backend string) (*Builder, error) {
	// The backend is detected from the file system of the data directory.
	if err := os.MkdirAll(root.Data(), 0o755); err != nil {
		return nil, fmt.Errorf("open template store: %w", err)
	}
	b, err := cow.ByName(root, backend, root.Data())
	if err != nil {
		return nil, err
	}
	bin, err := mariadb.FindBinary(ctx)
	if err != nil {
		return nil, err
	}
	cat, err := catalog.Open(root, b)
	if err != nil {
		return nil, err
	}
	return NewBuilder(cat, bin), nil
}

// Catalog is the catalog the builder publishes into.
func (b *Builder) Catalog() *catalog.Catalog { return b.cat }

// Binary is the server the builder builds with; a template's slots must
// run the same version.
func (b *Builder) Binary() *mariadb.Binary { return b.bin }

func (b *Builder) progress(format string, args ...any) {
	if b.Progress != nil {
		b.Progress(format, args...)
	}
}
