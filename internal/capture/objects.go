package capture

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/pristinedb/pristine/internal/quote"
	"github.com/pristinedb/pristine/internal/sqlrows"

	"github.com/go-sql-driver/mysql"
)

// object is a schema object made by one statement that must run with the
// session context the source recorded for it.
type object struct {
	kind, db, name string
	create         string
	sqlMode        string
	charsetClient  string
	collationConn  string
	timeZone       string // events only
}

// readObjects reads the routines, views, triggers and events of a
// database, in the order they must be created: routines (views may call
// them), views (in dependency order, worked out when they are created),
// triggers (in their action order), events.
func readObjects(ctx context.Context, db *sql.DB, schema string) ([]object, error) {
	var out []object
	q := func(kind, list, show string, pick func(cols, row []string) object) error {
		names, err := queryStrings(ctx, db, list, schema)
		if err != nil {
			return fmt.Errorf("list %ss of %s: %w", kind, schema, err)
		}
		for _, n := range names {
			kindWord := kind
			if kind == "routine" {
				var typ string
				n, typ, _ = strings.Cut(n, "\x00")
				kindWord = strings.ToLower(typ)
			}
			showQ := fmt.Sprintf(show, strings.ToUpper(kindWord), quote.Ident(schema)+"."+quote.Ident(n))
			var o object
			rows := 0
			err := sqlrows.Each(ctx, db, showQ, "", func(cols, row []string) error {
				if rows++; rows == 1 {
					o = pick(cols, row)
				}
				return nil
			})
			if err != nil {
				return fmt.Errorf("%s: %w", showQ, err)
			}
			if rows == 0 {
				return fmt.Errorf("%s: no row (was it dropped during the capture?)", showQ)
			}
			o.kind, o.db, o.name = kindWord, schema, n
			if o.create == "" {
				return fmt.Errorf("%w: %s returned no definition: run GRANT SELECT ON `mysql`.`proc` TO the capturing user on the source", ErrPrivilege, showQ)
			}
			out = append(out, o)
		}
		return nil
	}
	byName := func(cols, row []string, create string) object {
		o := object{}
		for i, c := range cols {
			switch c {
			case create:
				o.create = row[i]
			case "sql_mode":
				o.sqlMode = row[i]
			case "character_set_client":
				o.charsetClient = row[i]
			case "collation_connection":
				o.collationConn = row[i]
			case "time_zone":
				o.timeZone = row[i]
			}
		}
		return o
	}
	steps := []struct{ kind, list, show, create string }{
		{"routine", "SELECT CONCAT(ROUTINE_NAME, '\\0', ROUTINE_TYPE) FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA=? AND ROUTINE_TYPE IN ('PROCEDURE','FUNCTION') ORDER BY ROUTINE_TYPE, ROUTINE_NAME", "SHOW CREATE %s %s", ""},
		{"view", "SELECT TABLE_NAME FROM information_schema.VIEWS WHERE TABLE_SCHEMA=? ORDER BY TABLE_NAME", "SHOW CREATE %s %s", "Create View"},
		{"trigger", "SELECT TRIGGER_NAME FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA=? ORDER BY EVENT_OBJECT_TABLE, ACTION_TIMING, EVENT_MANIPULATION, ACTION_ORDER", "SHOW CREATE %s %s", "SQL Original Statement"},
		{"event", "SELECT EVENT_NAME FROM information_schema.EVENTS WHERE EVENT_SCHEMA=? ORDER BY EVENT_NAME", "SHOW CREATE %s %s", "Create Event"},
	}
	for _, st := range steps {
		st := st
		err := q(st.kind, st.list, st.show, func(cols, row []string) object {
			create := st.create
			if create == "" { // "Create Procedure" or "Create Function"
				for _, c := range cols {
					if strings.HasPrefix(c, "Create ") {
						create = c
					}
				}
			}
			return byName(cols, row, create)
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// createObjects creates objects on the target connection, each in its
// database with its recorded sql_mode, client character set, collation and
// time zone. Views that name views not created yet are retried after the
// others, which orders them by dependency.
func createObjects(ctx context.Context, dst *sql.Conn, objs []object) error {
	pending := objs
	for len(pending) > 0 {
		var retry []object
		var lastErr error
		for _, o := range pending {
			err := createObject(ctx, dst, o)
			if err != nil && o.kind == "view" && isMissingTable(err) {
				retry = append(retry, o)
				lastErr = err
				continue
			}
			if err != nil {
				return err
			}
		}
		if len(retry) == len(pending) {
			return lastErr
		}
		pending = retry
	}
	_, err := dst.ExecContext(ctx, "SET SESSION sql_mode=DEFAULT, character_set_client=DEFAULT, collation_connection=DEFAULT, time_zone='+00:00'")
	return err
}

func createObject(ctx context.Context, dst *sql.Conn, o object) error {
	set := []string{"sql_mode=" + quote.String(o.sqlMode)}
	if o.charsetClient != "" {
		set = append(set, "character_set_client="+quote.String(o.charsetClient))
	}
	if o.collationConn != "" {
		set = append(set, "collation_connection="+quote.String(o.collationConn))
	}
	if o.timeZone != "" {
		set = append(set, "time_zone="+quote.String(o.timeZone))
	}
	for _, q := range []string{"USE " + quote.Ident(o.db), "SET SESSION " + strings.Join(set, ", "), o.create} {
		if _, err := dst.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("create %s %s.%s: %w", o.kind, o.db, o.name, err)
		}
	}
	return nil
}

func isMissingTable(err error) bool {
	var me *mysql.MySQLError
	// 1146 no such table, 1356 view references invalid objects.
	return errors.As(err, &me) && (me.Number == 1146 || me.Number == 1356)
}
