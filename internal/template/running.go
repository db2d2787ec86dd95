package template

import (
	"context"
	"os"
	"path/filepath"

	"github.com/pristinedb/pristine/internal/catalog"
	"github.com/pristinedb/pristine/internal/cow"
	"github.com/pristinedb/pristine/internal/mariadb"
)

// Running is a server started on a private clone of a template, for work
// that reads or copies a template outside a pool (verify, benchmarks).
type Running struct {
	Inst *mariadb.Instance
	Meta *catalog.Meta
	dir  string
	rm   func() error
}

// Start clones template m under the root (as name, which must be unique
// among running clones) and starts a server on the clone with the build
// profile. Close stops it and removes the clone.
func (b *Builder) Start(ctx context.Context, m *catalog.Meta, name string) (*Running, error) {
	if err := catalog.CheckSecured(m); err != nil {
		return nil, err
	}
	be, err := b.cat.BackendFor(m)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(b.cat.Root().Data(), "scratch-servers", name)
	// Searchable by the servers' account (older versions made them 0700).
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.MkdirAll(d, 0o711); err != nil {
			return nil, err
		}
		if err := os.Chmod(d, 0o711); err != nil {
			return nil, err
		}
	}
	data := filepath.Join(dir, "data")
	if err := be.Remove(data); err != nil {
		return nil, err
	}
	id, err := b.claim(data)
	if err != nil {
		return nil, err
	}
	if err := cow.CloneAs(be, b.cat.DataDir(m.Hash), data, ownerOf(id)); err != nil {
		_ = b.seal(data)
		return nil, err
	}
	p := BuildProfileFor(m)
	in, err := mariadb.StartReady(ctx, b.bin, mariadb.Config{Datadir: data, RunDir: filepath.Join(b.cat.Root().Path, "run", "srv-"+name), Profile: p, AdminPassword: b.cat.Admin(), Account: &id.Account})
	r := &Running{Inst: in, Meta: m, dir: dir, rm: func() error {
		err := be.Remove(data)
		if serr := b.seal(data); err == nil {
			err = serr
		}
		return err
	}}
	if err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// BuildProfileFor is the build profile with the template's log size and
// server options (the settings its data was made with).
func BuildProfileFor(m *catalog.Meta) mariadb.Profile {
	p := mariadb.BuildProfile(mariadb.DefaultProfile())
	p.LogFileSize = m.LogFileSize
	p.Options = m.ServerOptions
	return p
}

// Close kills the server and removes its clone.
func (r *Running) Close() error {
	if r.Inst != nil {
		r.Inst.Kill()
		os.RemoveAll(r.Inst.Config.RunDir)
	}
	err := r.rm()
	os.RemoveAll(r.dir)
	return err
}
