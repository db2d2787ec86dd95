package bench

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/pristinedb/pristine/client"
	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/quote"
	"github.com/pristinedb/pristine/internal/server"
	"github.com/pristinedb/pristine/internal/verify"
)

// The soak's reset accounting and its write patterns: how many fresh
// copies per second the pool handed out, what each reset cost the machine
// in CPU, which path each reset took (in place, or full and why), and a
// verify of a sample of leases against a lease kept untouched.

// Write patterns of a soak cycle.
const (
	// PatternDefault deletes one row of the canary table.
	PatternDefault = "default"
	// PatternThreeTables deletes one row of each of three tables and
	// creates and fills a temporary table.
	PatternThreeTables = "3tables+temp"
)

// busyJiffies is the machine's busy CPU time so far, in clock ticks
// (/proc/stat: user, nice, system, irq, softirq).
func busyJiffies() int64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	var sum int64
	for _, i := range []int{1, 2, 3, 6, 7} {
		if i < len(f) {
			n, _ := strconv.ParseInt(f[i], 10, 64)
			sum += n
		}
	}
	return sum
}

// pathDelta is now's reset path counts less before's.
func pathDelta(before, now map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for k, n := range now {
		if d := n - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// writeTables picks the tables a pattern writes: the n smallest tables
// with rows that no foreign key points at (so a row can be deleted).
func writeTables(ctx context.Context, db *sql.DB, n int) ([]string, error) {
	rows, err := db.QueryContext(ctx, `SELECT TABLE_NAME FROM information_schema.TABLES
		WHERE TABLE_SCHEMA=DATABASE() AND TABLE_TYPE='BASE TABLE' AND TABLE_ROWS > 0
		AND TABLE_NAME NOT IN (SELECT REFERENCED_TABLE_NAME FROM information_schema.REFERENTIAL_CONSTRAINTS WHERE CONSTRAINT_SCHEMA=DATABASE())
		ORDER BY TABLE_ROWS, TABLE_NAME LIMIT `+strconv.Itoa(n))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(out) < n {
		return nil, fmt.Errorf("soak: the template has %d table(s) a row can be deleted from, the pattern needs %d", len(out), n)
	}
	return out, nil
}

// write does a cycle's writes: one row deleted from each table, and with
// temp a temporary table made and filled.
func write(ctx context.Context, db *sql.DB, tables []string, temp bool) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	for _, t := range tables {
		if _, err := conn.ExecContext(ctx, "DELETE FROM "+quote.Ident(t)+" LIMIT 1"); err != nil {
			return err
		}
	}
	if temp {
		if _, err := conn.ExecContext(ctx, "CREATE TEMPORARY TABLE soak_scratch (id INT PRIMARY KEY, v VARCHAR(20))"); err != nil {
			return err
		}
		if _, err := conn.ExecContext(ctx, "INSERT INTO soak_scratch VALUES (1, 'soak'), (2, 'soak')"); err != nil {
			return err
		}
	}
	return nil
}

// reference is a lease kept untouched for the whole soak, the template
// the sampled leases are verified against.
type reference struct {
	c  *client.Client
	id string
	db *sql.DB
	// name is the lease's database.
	name string
	// src is its schemas and rows, read once: the lease is never written.
	src *verify.Source
}

func newReference(ctx context.Context, c *client.Client, template string) (*reference, error) {
	l, err := c.Lease(ctx, server.LeaseRequest{Template: template, Holder: "soak-reference", Wait: 120})
	if err != nil {
		return nil, err
	}
	db, err := sql.Open("mysql", l.DSN)
	if err != nil {
		_, _ = c.Release(context.WithoutCancel(ctx), l.ID, true)
		return nil, err
	}
	src, err := verify.ReadSource(ctx, verify.Side{DB: db, Label: "reference lease"},
		// One connection reads the sampled lease: a verify takes one core,
		// not both, from the soak's other clients.
		verify.Options{Pairs: []verify.Pair{{Source: l.Database}}, SkipUsers: true, Workers: 1})
	if err != nil {
		db.Close()
		_, _ = c.Release(context.WithoutCancel(ctx), l.ID, true)
		return nil, err
	}
	return &reference{c: c, id: l.ID, db: db, name: l.Database, src: src}, nil
}

// close releases the reference lease, unchanged.
func (r *reference) close(ctx context.Context) {
	r.db.Close()
	_, _ = r.c.Release(context.WithoutCancel(ctx), r.id, true)
}

// verify compares a fresh lease's database with the reference's (read
// once, when the soak began): schema object by object and every table's
// rows by checksum. It returns the
// differences found, as text.
func (r *reference) verify(ctx context.Context, db *sql.DB, name string) ([]string, error) {
	rep, err := r.src.Compare(ctx, verify.Side{DB: db, Label: "sampled lease"}, []verify.Pair{{Source: r.name, Target: name}})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, d := range rep.Diffs {
		out = append(out, fmt.Sprintf("%s %s %s %s", d.Kind, d.Object, d.Part, d.Change))
	}
	return out, nil
}

// writer is what each cycle writes.
type writer struct {
	tables []string
	temp   bool
}

// patternTables picks PatternThreeTables' tables from a lease released
// unchanged.
func patternTables(ctx context.Context, c *client.Client, template string) ([]string, error) {
	l, err := c.Lease(ctx, server.LeaseRequest{Template: template, Holder: "soak-pattern", Wait: 120})
	if err != nil {
		return nil, err
	}
	defer c.Release(context.WithoutCancel(ctx), l.ID, true)
	db, err := sql.Open("mysql", l.DSN)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	return writeTables(ctx, db, 3)
}

// procTicks reads fields of /proc/PID/stat (counted from 1 as in
// proc(5)): the CPU times utime 14, stime 15, cutime 16, cstime 17; and
// ppid 4.
func procTicks(pid int, fields ...int) []int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil
	}
	f := strings.Fields(s[i+1:]) // f[0] is field 3
	out := make([]int64, len(fields))
	for k, n := range fields {
		if n-3 < len(f) {
			out[k], _ = strconv.ParseInt(f[n-3], 10, 64)
		}
	}
	return out
}

// pristineTicks is the CPU time, in clock ticks, of the daemon serving
// the slot servers under data (with every child it reaped: the servers
// full resets killed) and of the servers alive now. Kernel threads'
// work for the daemon (btrfs' cleaner deleting old clones) is not in it.
// The daemon is the servers' parent; 0 when no server runs.
func pristineTicks(data string) int64 {
	servers := mariadb.Servers(data)
	var sum int64
	daemon := 0
	for _, pid := range servers {
		t := procTicks(pid, 14, 15, 4)
		if t == nil {
			continue
		}
		sum += t[0] + t[1]
		daemon = int(t[2])
	}
	if daemon > 1 {
		if t := procTicks(daemon, 14, 15, 16, 17); t != nil {
			sum += t[0] + t[1] + t[2] + t[3]
		}
	}
	return sum
}
