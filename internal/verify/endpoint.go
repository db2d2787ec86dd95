package verify

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/go-sql-driver/mysql"

	"github.com/pristinedb/pristine/internal/catalog"
	"github.com/pristinedb/pristine/internal/dsn"
	"github.com/pristinedb/pristine/internal/template"
)

// Endpoint is one side of `pristine verify`, connected.
type Endpoint struct {
	Side
	// Database is the schema the reference names (a DSN's path, a lease's
	// database); empty for a whole server (a template).
	Database string
	close    func() error
}

// Close disconnects and stops what Open started.
func (e *Endpoint) Close() error {
	err := e.DB.Close()
	if e.close != nil {
		if cerr := e.close(); err == nil {
			err = cerr
		}
	}
	return err
}

// Opener resolves what a user names on the command line.
type Opener struct {
	// Builder opens the template catalog of the root and its builder, for
	// template names (a template is served from a private clone); nil
	// when there is no root.
	Builder func(ctx context.Context) (*template.Builder, error)
	// Lease finds a lease held now (asking the root's daemon) and returns
	// its slot server's socket, its database and a label; nil when there is
	// no daemon to ask.
	Lease func(ctx context.Context, id string) (socket, database, label string, err error)
	// Admin returns the root's admin secret, root@localhost's password on
	// the slot servers; nil when there is no root.
	Admin func() (string, error)
}

var leaseIDRe = regexp.MustCompile(`^[0-9a-f]{24}$`)

// Open connects to ref: a mysql:// URL (or a driver DSN), a lease id (asked
// of the root's daemon; verify connects as root over the slot's socket), or
// a template name (started on a private clone, stopped by Close).
func (o Opener) Open(ctx context.Context, ref string) (*Endpoint, error) {
	switch {
	case strings.Contains(ref, "://") || strings.Contains(ref, "@tcp(") || strings.Contains(ref, "@unix("):
		cfg, err := dsn.Parse(ref)
		if err != nil {
			return nil, err
		}
		return openConfig(ctx, cfg, dsn.Redacted(cfg), cfg.DBName, nil)
	case leaseIDRe.MatchString(ref):
		return o.openLease(ctx, ref)
	}
	return o.openTemplate(ctx, ref)
}

func openConfig(ctx context.Context, cfg *mysql.Config, label, database string, closeFn func() error) (*Endpoint, error) {
	cfg = cfg.Clone()
	cfg.DBName = ""
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", label, err)
	}
	db := sql.OpenDB(conn)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		if closeFn != nil {
			closeFn()
		}
		return nil, fmt.Errorf("connect to %s: %w", label, err)
	}
	return &Endpoint{Side: Side{DB: db, Label: label}, Database: database, close: closeFn}, nil
}

func (o Opener) openLease(ctx context.Context, id string) (*Endpoint, error) {
	if o.Lease == nil {
		return nil, fmt.Errorf("lease %s: no daemon to ask: pass --root", id)
	}
	socket, database, label, err := o.Lease(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("lease %s: %w", id, err)
	}
	if o.Admin == nil {
		return nil, fmt.Errorf("lease %s: no admin secret to connect with: pass --root", id)
	}
	secret, err := o.Admin()
	if err != nil {
		return nil, fmt.Errorf("lease %s: %w", id, err)
	}
	cfg, err := mysql.ParseDSN(dsn.Socket(socket, "root", secret, ""))
	if err != nil {
		return nil, err
	}
	return openConfig(ctx, cfg, label, database, nil)
}

func (o Opener) openTemplate(ctx context.Context, name string) (*Endpoint, error) {
	if err := catalog.ValidName(name); err != nil {
		return nil, fmt.Errorf("%q is neither a mysql:// URL, a lease id nor a template name", name)
	}
	if o.Builder == nil {
		return nil, fmt.Errorf("template %s: no root to find it in: pass --root", name)
	}
	st, err := o.Builder(ctx)
	if err != nil {
		return nil, err
	}
	m, err := st.Catalog().Get(name)
	if err != nil {
		return nil, err
	}
	r, err := st.Start(ctx, m, fmt.Sprintf("verify-%d-%s", os.Getpid(), m.Hash[:8]))
	if err != nil {
		return nil, fmt.Errorf("start template %s: %w", name, err)
	}
	cfg, err := mysql.ParseDSN(r.Inst.DSN(""))
	if err != nil {
		r.Close()
		return nil, err
	}
	label := fmt.Sprintf("template %s (%s)", m.Name, m.Hash[:12])
	return openConfig(ctx, cfg, label, "", r.Close)
}

// ErrDifferent is returned by callers (the CLI) when a comparison found
// differences, so the exit status says so.
var ErrDifferent = errors.New("the target differs from the source")
