package verify

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/quote"
	"github.com/pristinedb/pristine/internal/sqlrows"
)

// snapshot is what one side holds, keyed by the source's names.
type snapshot struct {
	objs  map[objKey]*object
	notes []string
}

// reader reads one side on one connection.
type reader struct {
	ctx     context.Context
	c       *sql.Conn
	flavor  mariadb.Flavor // probed once, when the snapshot starts
	canon   canon
	schemas []string
	in      string // SQL list of the schemas, for IN (...)
	s       *snapshot
	tables  [][2]string // base tables to checksum: schema, name
}

// session makes SHOW CREATE print the same way on every server.
var session = []string{
	"SET NAMES utf8mb4",
	"SET SESSION sql_mode=''",
	"SET SESSION sql_quote_show_create=1",
	"SET SESSION group_concat_max_len=1048576",
}

func setupConn(ctx context.Context, db *sql.DB) (*sql.Conn, error) {
	c, err := db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	for _, q := range session {
		if _, err := c.ExecContext(ctx, q); err != nil {
			c.Close()
			return nil, fmt.Errorf("%s: %w", q, err)
		}
	}
	return c, nil
}

// read takes a snapshot of schemas on db.
func read(ctx context.Context, db *sql.DB, schemas []string, cn canon, opt Options) (*snapshot, error) {
	c, err := setupConn(ctx, db)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	flavor, err := mariadb.Probe(ctx, c)
	if err != nil {
		return nil, err
	}
	q := make([]string, len(schemas))
	for i, s := range schemas {
		q[i] = quote.String(s)
	}
	r := &reader{ctx: ctx, c: c, flavor: flavor, canon: cn, schemas: schemas, in: "(" + strings.Join(q, ",") + ")",
		s: &snapshot{objs: map[objKey]*object{}}}
	steps := []func() error{r.databases, r.tablesAndViews, r.triggers, r.routines, r.events}
	if !opt.SkipUsers {
		steps = append(steps, func() error { return r.users(opt) })
	}
	for _, f := range steps {
		if err := f(); err != nil {
			return nil, err
		}
	}
	if !opt.SkipData {
		if err := r.checksums(db, opt.Workers); err != nil {
			return nil, err
		}
	}
	return r.s, nil
}

func (r *reader) add(kind, schema, name string) *object {
	k := objKey{kind, quote.Ident(r.canon.schema(schema))}
	if name != "" {
		k.name = quote.Qualified(r.canon.schema(schema), name)
	} else {
		k.name = quote.Ident(r.canon.schema(schema))
	}
	o := newObject()
	r.s.objs[k] = o
	return o
}

// query runs q and calls f with each row's columns as strings (NULL is
// "NULL"); every error, f's too, comes back naming the statement.
func (r *reader) query(q string, f func(cols []string, row []string) error) error {
	if err := sqlrows.Each(r.ctx, r.c, q, "NULL", f); err != nil {
		return fmt.Errorf("%s: %w", abbrev(q, 120), err)
	}
	return nil
}

// show runs a SHOW CREATE statement and stores each column but the first
// (the name) and skipped ones as a part of o.
func (r *reader) show(o *object, q string, skip ...string) error {
	n := 0
	err := r.query(q, func(cols, row []string) error {
		n++
	next:
		for i := 1; i < len(cols); i++ {
			for _, s := range skip {
				if strings.EqualFold(cols[i], s) {
					continue next
				}
			}
			o.set(strings.ToLower(cols[i]), r.canon.text(row[i]))
		}
		return nil
	})
	if err == nil && n == 0 {
		err = fmt.Errorf("%s: no answer", q)
	}
	return err
}

func (r *reader) databases() error {
	// SELECT *: MySQL's SCHEMATA has no SCHEMA_COMMENT (a database
	// comment is MariaDB's), and each flavour adds its own columns.
	return r.query("SELECT * FROM information_schema.SCHEMATA WHERE SCHEMA_NAME IN "+r.in, func(cols, row []string) error {
		v := map[string]string{}
		for i, c := range cols {
			v[strings.ToUpper(c)] = row[i]
		}
		o := r.add("database", v["SCHEMA_NAME"], "")
		o.set("character set", v["DEFAULT_CHARACTER_SET_NAME"])
		o.set("collation", v["DEFAULT_COLLATION_NAME"])
		o.set("comment", v["SCHEMA_COMMENT"])
		return nil
	})
}

func (r *reader) tablesAndViews() error {
	type tbl struct{ schema, name, typ, engine, rowFormat string }
	var all []tbl
	err := r.query("SELECT TABLE_SCHEMA, TABLE_NAME, TABLE_TYPE, ENGINE, ROW_FORMAT FROM information_schema.TABLES WHERE TABLE_SCHEMA IN "+r.in+" ORDER BY TABLE_SCHEMA, TABLE_NAME", func(_, row []string) error {
		all = append(all, tbl{row[0], row[1], row[2], row[3], row[4]})
		return nil
	})
	if err != nil {
		return err
	}
	for _, t := range all {
		name := quote.Qualified(t.schema, t.name)
		switch t.typ {
		case "VIEW":
			if err := r.show(r.add("view", t.schema, t.name), "SHOW CREATE VIEW "+name); err != nil {
				return err
			}
		case "SEQUENCE":
			o := r.add("sequence", t.schema, t.name)
			if err := r.show(o, "SHOW CREATE SEQUENCE "+name); err != nil {
				return err
			}
			if err := r.query("SELECT * FROM "+name, func(cols, row []string) error {
				for i := range cols {
					o.set("state "+cols[i], row[i])
				}
				return nil
			}); err != nil {
				return err
			}
		default:
			o := r.add("table", t.schema, t.name)
			var create string
			if err := r.query("SHOW CREATE TABLE "+name, func(_, row []string) error { create = row[1]; return nil }); err != nil {
				return err
			}
			for _, p := range splitCreateTable(r.canon.text(create)) {
				o.set(p[0], p[1])
			}
			o.set("engine", t.engine)
			o.set("row format", t.rowFormat)
			r.tables = append(r.tables, [2]string{t.schema, t.name})
		}
	}
	return nil
}

func (r *reader) triggers() error {
	type trg struct{ schema, name, table, order string }
	var all []trg
	err := r.query("SELECT TRIGGER_SCHEMA, TRIGGER_NAME, EVENT_OBJECT_TABLE, ACTION_ORDER FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA IN "+r.in, func(_, row []string) error {
		all = append(all, trg{row[0], row[1], row[2], row[3]})
		return nil
	})
	if err != nil {
		return err
	}
	for _, t := range all {
		o := r.add("trigger", t.schema, t.name)
		o.set("table", t.table)
		o.set("order", t.order)
		if err := r.show(o, "SHOW CREATE TRIGGER "+quote.Qualified(t.schema, t.name), "Created"); err != nil {
			return err
		}
	}
	return nil
}

func (r *reader) routines() error {
	type rtn struct{ schema, name, typ string }
	var all []rtn
	err := r.query("SELECT ROUTINE_SCHEMA, ROUTINE_NAME, ROUTINE_TYPE FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA IN "+r.in, func(_, row []string) error {
		all = append(all, rtn{row[0], row[1], row[2]})
		return nil
	})
	if err != nil {
		return err
	}
	for _, x := range all {
		o := r.add(strings.ToLower(x.typ), x.schema, x.name)
		if err := r.show(o, "SHOW CREATE "+x.typ+" "+quote.Qualified(x.schema, x.name)); err != nil {
			return err
		}
	}
	return nil
}

func (r *reader) events() error {
	type evt struct{ schema, name string }
	var all []evt
	err := r.query("SELECT EVENT_SCHEMA, EVENT_NAME FROM information_schema.EVENTS WHERE EVENT_SCHEMA IN "+r.in, func(_, row []string) error {
		all = append(all, evt{row[0], row[1]})
		return nil
	})
	if err != nil {
		return err
	}
	for _, e := range all {
		if err := r.show(r.add("event", e.schema, e.name), "SHOW CREATE EVENT "+quote.Qualified(e.schema, e.name)); err != nil {
			return err
		}
	}
	return nil
}
