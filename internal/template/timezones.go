package template

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/pristinedb/pristine/internal/catalog"
	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/sqlload"
)

// ZoneinfoDir is where the system's time zone files are read from.
const ZoneinfoDir = "/usr/share/zoneinfo"

// zoneinfoDir is where the time zone files are read from.
func (b *Builder) zoneinfoDir() string {
	if b.zoneinfo != "" {
		return b.zoneinfo
	}
	return ZoneinfoDir
}

// timezoneLoader returns the server's own loader of time zone tables
// (mariadb-tzinfo-to-sql, MySQL's mysql_tzinfo_to_sql: Binary.TimezoneLoaders)
// when the base data directory gets them: unless NoTimezones, with the
// loader installed and the system's zoneinfo present. "" means the tables
// stay empty.
func (b *Builder) timezoneLoader() string {
	if b.NoTimezones {
		return ""
	}
	if _, err := os.Stat(b.zoneinfoDir()); err != nil {
		return ""
	}
	for _, name := range b.bin.TimezoneLoaders() {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// baseKey names the base data directory of profile p: the server, the
// profile, and whether its time zone tables are loaded.
func (b *Builder) baseKey(p mariadb.Profile, loader string) string {
	profile := p.Key()
	if loader != "" {
		profile += " timezones"
	}
	return catalog.BaseKey(b.bin.Version, profile)
}

// timezonesKey is what a template's hash adds for its base's time zone
// tables: a marker when they are loaded, another with NoTimezones, and
// nothing when they stay empty because the loader or the zoneinfo is
// missing (as every template was before they were loaded). A template
// built on a base without them is built again once they are loaded, and
// when the flag changes.
func (b *Builder) timezonesKey() string {
	switch {
	case b.NoTimezones:
		return " no-timezones"
	case b.timezoneLoader() != "":
		return " timezones"
	}
	return ""
}

// loadTimezones fills mysql.time_zone* of the base's server from the
// system's zoneinfo with loader, as MariaDB's and MySQL's official images
// do, on one connection: MariaDB's loader locks the tables (UNLOCK TABLES
// at the end releases them), MySQL's truncates its InnoDB tables and
// inserts in one transaction (where UNLOCK TABLES does nothing).
func (b *Builder) loadTimezones(ctx context.Context, in *mariadb.Instance, loader string) error {
	b.progress("loading time zone tables (%s %s; --no-timezones skips them)", loader, b.zoneinfoDir())
	start := time.Now()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, loader, b.zoneinfoDir())
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	// Many statements per round trip (0.7 s here, 1.1 s for the loader's
	// thousands of small INSERTs one by one).
	cfg, err := mysql.ParseDSN(in.DSN("mysql"))
	if err != nil {
		return err
	}
	cfg.MultiStatements = true
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return err
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("load time zone tables: %w", err)
	}
	defer conn.Close()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("load time zone tables: %w: install it, or pass --no-timezones", err)
	}
	loadErr := func() error {
		sp := sqlload.NewSplitter(out)
		var batch strings.Builder
		flush := func() error {
			if batch.Len() == 0 {
				return nil
			}
			_, err := conn.ExecContext(ctx, batch.String())
			batch.Reset()
			return err
		}
		for {
			st, err := sp.Next()
			if errors.Is(err, io.EOF) {
				return flush()
			}
			if err != nil {
				return err
			}
			batch.WriteString(st.Text)
			batch.WriteString(";\n")
			if batch.Len() >= 1<<20 {
				if err := flush(); err != nil {
					return err
				}
			}
		}
	}()
	if loadErr != nil {
		_, _ = io.Copy(io.Discard, out)
	}
	waitErr := cmd.Wait()
	if loadErr == nil && waitErr != nil {
		loadErr = fmt.Errorf("%s: %w: %s", loader, waitErr, bytes.TrimSpace(stderr.Bytes()))
	}
	if loadErr != nil {
		return fmt.Errorf("load time zone tables: %w (pass --no-timezones to skip them)", loadErr)
	}
	if _, err := conn.ExecContext(ctx, "UNLOCK TABLES"); err != nil {
		return fmt.Errorf("load time zone tables: %w", err)
	}
	b.progress("time zone tables loaded in %.1fs", time.Since(start).Seconds())
	return nil
}
