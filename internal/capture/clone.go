package capture

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/quote"
)

// Physical capture of a MySQL 8/9 source goes through MySQL's clone
// plugin: a private recipient server that pristine starts on an empty
// data directory runs CLONE INSTANCE FROM the source into a new directory,
// over TCP (the plugin has no socket transport), with the source's own
// page tracking giving a consistent copy of the whole instance while it
// keeps running. The recipient's data directory is then thrown away and
// the clone started once (InnoDB recovers it) and stopped cleanly by the
// template build, as a mariadb-backup copy is.

// cloneBlocker says why a MySQL source cannot be cloned here, or "".
func cloneBlocker(ctx context.Context, src *Source, bin *mariadb.Binary) string {
	if bin.Flavor != src.Flavor {
		return fmt.Sprintf("the source is MySQL (%s) but the installed server is %s: a clone must be started by the same server", src.Version, bin.Version)
	}
	if !sameRelease(src.Version, bin.Version) {
		return fmt.Sprintf("the source runs MySQL %s but the installed server is %s: the clone plugin needs the same release on both sides", src.Version, bin.Version)
	}
	if src.Config.Net != "tcp" {
		return "the clone plugin connects to the source over TCP: give --from-server as mysql://user:password@host:port/"
	}
	var status sql.NullString
	if err := src.DB.QueryRowContext(ctx, "SELECT PLUGIN_STATUS FROM information_schema.PLUGINS WHERE PLUGIN_NAME = 'clone'").Scan(&status); err != nil || status.String != "ACTIVE" {
		return "the clone plugin is not active on the source: INSTALL PLUGIN clone SONAME 'mysql_clone.so' there (pristine does not install plugins on a live server)"
	}
	if !src.grants.has("BACKUP_ADMIN", "") {
		return src.grants.missing("BACKUP_ADMIN", "", "for the clone plugin to copy the instance").Error()
	}
	return ""
}

// sameRelease compares two MySQL version strings up to the patch level
// (9.7.4-2 and 9.7.4 are one release; Debian's suffix is packaging).
func sameRelease(a, b string) bool {
	cut := func(v string) string {
		if i := strings.IndexAny(v, "-+~ "); i >= 0 {
			v = v[:i]
		}
		return v
	}
	return cut(a) == cut(b)
}

// errCloneConfig is MySQL's ER_CLONE_CONFIG: "Clone Configuration
// <variable>: Donor value: ... is different from Recipient value: ...".
const errCloneConfig = 3868

// CloneStats describe a finished clone.
type CloneStats struct {
	Bytes   int64
	Elapsed time.Duration
	// GTID is the source's gtid_executed at the clone's consistency point
	// (performance_schema.clone_status); empty when the source has GTIDs
	// off.
	GTID string
}

// Clone runs CLONE INSTANCE FROM the source on recipient, a private MySQL
// server started with the clone plugin loaded (--plugin-load-add=
// mysql_clone.so), as its root, into dir, which must not exist and whose
// parent the recipient's account can write. The source's password goes
// over the recipient's private socket as SQL, never into argv or a log.
func Clone(ctx context.Context, src *Source, recipient *sql.DB, dir string, opt Options) (CloneStats, error) {
	start := time.Now()
	var st CloneStats
	host, port := src.Config.Addr, ""
	if h, p, err := net.SplitHostPort(src.Config.Addr); err == nil {
		host, port = h, p
	}
	if port == "" {
		port = strconv.Itoa(src.Port)
	}
	donor := net.JoinHostPort(host, port)
	user := src.Config.User
	c, err := recipient.Conn(ctx)
	if err != nil {
		return st, fmt.Errorf("clone: recipient: %w", err)
	}
	defer c.Close()
	if _, err := c.ExecContext(ctx, "SET GLOBAL clone_valid_donor_list = "+quote.String(donor)); err != nil {
		return st, fmt.Errorf("clone: allow donor %s on the recipient: %w", donor, err)
	}
	opt.log("cloning %s (%s) with MySQL's clone plugin", src.Name(), donor)
	done := make(chan struct{})
	defer close(done)
	if opt.Progress != nil {
		go cloneProgress(ctx, recipient, opt, done)
	}
	q := "CLONE INSTANCE FROM " + quote.String(user) + "@" + quote.String(host) + ":" + port +
		" IDENTIFIED BY " + quote.String(src.Config.Passwd) + " DATA DIRECTORY = " + quote.String(dir)
	if _, err := c.ExecContext(ctx, q); err != nil {
		if me := (*mysql.MySQLError)(nil); errors.As(err, &me) && me.Number == errCloneConfig {
			return st, fmt.Errorf("clone: CLONE INSTANCE FROM %s@%s: a setting of the template's server differs from the source's, and the clone plugin wants them equal (pristine gives the template the source's character set and collation; a --server-option that changes one must go): %w", user, donor, err)
		}
		return st, fmt.Errorf("clone: CLONE INSTANCE FROM %s@%s (the source's user needs BACKUP_ADMIN, and must log in over TCP from this host): %w", user, donor, err)
	}
	var bytes sql.NullInt64
	_ = c.QueryRowContext(ctx, "SELECT SUM(DATA) FROM performance_schema.clone_progress").Scan(&bytes)
	st.Bytes = bytes.Int64
	var gtid sql.NullString
	_ = c.QueryRowContext(ctx, "SELECT GTID_EXECUTED FROM performance_schema.clone_status ORDER BY ID DESC LIMIT 1").Scan(&gtid)
	st.GTID = strings.TrimSpace(gtid.String)
	st.Elapsed = time.Since(start)
	return st, nil
}

// cloneProgress prints the clone's stage and bytes about once a second.
func cloneProgress(ctx context.Context, db *sql.DB, opt Options, done <-chan struct{}) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-ctx.Done():
			return
		case <-t.C:
		}
		var stage sql.NullString
		var data sql.NullInt64
		if err := db.QueryRowContext(ctx, `SELECT (SELECT STAGE FROM performance_schema.clone_progress WHERE STATE = 'In Progress' LIMIT 1),
			(SELECT SUM(DATA) FROM performance_schema.clone_progress)`).Scan(&stage, &data); err == nil && stage.Valid {
			fmt.Fprintf(opt.Progress, "\rclone: %s, %d MB copied", strings.ToLower(stage.String), data.Int64>>20)
		}
	}
}
