// Package capture copies a live MariaDB server into a template's data
// directory, in one of two ways:
//
//   - logical: a consistent snapshot shared by several connections (a
//     short FLUSH TABLES WITH READ LOCK, or LOCK TABLES ... READ, while each
//     connection starts a transaction WITH CONSISTENT SNAPSHOT), tables
//     split by primary-key ranges and streamed straight into the template
//     server with LOAD DATA LOCAL INFILE from a reader; then views,
//     routines, triggers, events and the accounts that hold privileges on
//     the chosen databases, each with its DEFINER and sql_mode/charset
//     context;
//   - physical: `mariadb-backup --backup --stream=xbstream` of a server on
//     this host, extracted by internal/xbstream and prepared with
//     `mariadb-backup --prepare`.
//
// Choose picks between them and says why. The template package turns the
// result into a template (docs/capture.md).
package capture

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/pristinedb/pristine/internal/quote"

	"github.com/go-sql-driver/mysql"

	"github.com/pristinedb/pristine/internal/dsn"
	"github.com/pristinedb/pristine/internal/mariadb"
)

// systemSchemas are never captured as user databases.
var systemSchemas = map[string]bool{"mysql": true, "information_schema": true, "performance_schema": true, "sys": true}

// Source is a live server to capture, probed once when opened.
type Source struct {
	Config *mysql.Config
	DB     *sql.DB
	// Version is @@version, e.g. "10.11.19-MariaDB-0+deb12u1".
	Version      string
	Major, Minor int
	// Flavor is the server's dialect, from its version at the first
	// probe (mariadb.FlavorOf); what a capture does differently on MySQL
	// it asks of it.
	Flavor mariadb.Flavor
	// UUID is @@server_uuid where the server has one, else empty.
	UUID     string
	Hostname string
	Port     int
	Datadir  string
	// LogBin says whether binary logging is on; GTID is then
	// @@gtid_binlog_pos, the source's change marker.
	LogBin bool
	GTID   string
	// Databases are the schemas to capture: those asked for, or every
	// non-system schema.
	Databases []string
	// Bytes is the size of their tables and indexes (information_schema's
	// estimate).
	Bytes int64
	// Options are the source's settings a physical copy of its data
	// needs on the server that starts it, as server options
	// (mariadb.SourceOptions): its character set and collation, and its
	// table name case and InnoDB page size where not the default.
	Options  []string
	grants   *grants
	timeouts *atomic.Int64 // reads and writes that timed out, on any connection to the source
}

// Open connects to the server cfg names and probes it. databases limits
// the capture; empty means every non-system schema. Errors name the server
// without its password. cfg's Timeout bounds connecting (greeting and
// authentication included) and its ReadTimeout and WriteTimeout each read
// and write; unset, they are DefaultConnectTimeout and DefaultIOTimeout.
func Open(ctx context.Context, cfg *mysql.Config, databases []string) (*Source, error) {
	c := withTimeouts(cfg)
	c.DBName = ""
	c.ParseTime = false
	c.InterpolateParams = false
	c.AllowAllFiles = false
	s := &Source{Config: c, timeouts: new(atomic.Int64)}
	conn, err := connector(c, s.timeouts)
	if err != nil {
		return nil, fmt.Errorf("source %s: %w", dsn.Redacted(cfg), err)
	}
	db := sql.OpenDB(conn)
	s.DB = db
	if err := s.probe(ctx, databases); err != nil {
		db.Close()
		return nil, fmt.Errorf("source %s: %w", dsn.Redacted(cfg), s.explainTimeout(err))
	}
	return s, nil
}

// Close closes the source's connections.
func (s *Source) Close() error { return s.DB.Close() }

// Name is the source's URL without its password, for messages.
func (s *Source) Name() string { return dsn.Redacted(s.Config) }

func (s *Source) probe(ctx context.Context, databases []string) error {
	var logBin int
	var hostname, datadir sql.NullString
	if err := s.DB.QueryRowContext(ctx, "SELECT @@version, @@hostname, @@port, @@datadir, @@log_bin").Scan(&s.Version, &hostname, &s.Port, &datadir, &logBin); err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	s.Hostname, s.Datadir, s.LogBin = hostname.String, datadir.String, logBin == 1
	s.Flavor = mariadb.FlavorOf(s.Version)
	parts := strings.SplitN(s.Version, ".", 3)
	if len(parts) >= 2 {
		s.Major, _ = strconv.Atoi(parts[0])
		s.Minor, _ = strconv.Atoi(parts[1])
	}
	opts, err := mariadb.SourceOptions(ctx, s.DB)
	if err != nil {
		return err
	}
	s.Options = opts
	// MySQL and MariaDB 11.x have server_uuid; 10.x does not.
	var uuid sql.NullString
	if err := s.DB.QueryRowContext(ctx, "SELECT @@server_uuid").Scan(&uuid); err == nil {
		s.UUID = uuid.String
	}
	if err := s.Marker(ctx); err != nil {
		return err
	}
	g, err := readGrants(ctx, s.DB)
	if err != nil {
		return err
	}
	s.grants = g
	all, err := queryStrings(ctx, s.DB, "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA ORDER BY SCHEMA_NAME")
	if err != nil {
		return fmt.Errorf("list databases: %w", err)
	}
	if len(databases) == 0 {
		for _, d := range all {
			if !systemSchemas[d] {
				s.Databases = append(s.Databases, d)
			}
		}
	} else {
		have := map[string]bool{}
		for _, d := range all {
			have[d] = true
		}
		for _, d := range databases {
			switch {
			case systemSchemas[d]:
				return fmt.Errorf("database %s is a system schema: capture user databases only (accounts are captured with them)", d)
			case !have[d] && !g.has("SELECT", d):
				return g.missing("SELECT", d, "to see the database (if it exists)")
			case !have[d]:
				return fmt.Errorf("database %s does not exist on the source (or this user cannot see it): check --databases", d)
			}
			s.Databases = append(s.Databases, d)
		}
	}
	if len(s.Databases) == 0 {
		return fmt.Errorf("no user databases to capture: create one or pass --databases")
	}
	in := make([]string, len(s.Databases))
	for i, d := range s.Databases {
		in[i] = quote.String(d)
	}
	var size sql.NullInt64
	if err := s.DB.QueryRowContext(ctx, "SELECT SUM(DATA_LENGTH + INDEX_LENGTH) FROM information_schema.TABLES WHERE TABLE_SCHEMA IN ("+strings.Join(in, ",")+")").Scan(&size); err != nil {
		return fmt.Errorf("size of the databases: %w", err)
	}
	s.Bytes = size.Int64
	return nil
}

// Marker reads the change marker again when binary logging is on:
// @@gtid_binlog_pos on MariaDB; on MySQL @@gtid_executed, or the binary
// log's file and position when GTIDs are off (binlogMarker).
func (s *Source) Marker(ctx context.Context) error {
	if !s.LogBin {
		s.GTID = ""
		return nil
	}
	pos, err := binlogMarker(ctx, s.DB, s.Flavor)
	if err != nil {
		return err
	}
	s.GTID = pos
	return nil
}

// Identity names the source for a template hash: where it is and which
// server it is. The change marker is separate (GTID).
func (s *Source) Identity() string {
	id := s.UUID
	if id == "" {
		id = s.Hostname
	}
	return fmt.Sprintf("%s %s server=%s datadir=%s version=%s", s.Config.Net, s.Config.Addr, id, s.Datadir, s.Version)
}

func queryStrings(ctx context.Context, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, query string, args ...any) ([]string, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v sql.NullString
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v.String)
	}
	return out, rows.Err()
}
