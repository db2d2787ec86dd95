package pool

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"sync"
)

// poolGlobals hashes the global variables of a pool's servers, so that a
// global change (SET GLOBAL, by any path) makes a release --unchanged
// dirty and an in-place reset full.
//
// The pool's first read lists the variables (SHOW GLOBAL VARIABLES); from
// then on every read is one SELECT of their @@GLOBAL values (query), which
// each server prepares once (serverGlobals). SHOW GLOBAL
// VARIABLES stores some 650 rows of up to 2 KB in a temporary table, more
// than a slot's in-memory one holds, so each read wrote a file: 1.5-4 ms
// of the server's CPU, and most drivers run a SET at every connect, which
// makes a check read the hash again. The prepared SELECT costs it about
// 0.3 ms.
//
// Left out: the GTID positions, which move only with replication or the
// binary log (both off), the server's read-only identity (MariaDB's
// server_uid, MySQL's server_uuid) and its read-only port (port,
// report_port), which differ between a pool's servers. The slot's
// directories within a value (data directory, socket, tmpdir, error
// log...) are hashed as placeholders. So the fresh slots of a pool, which
// start from one template with the same options but for their own
// directories and port, hash alike: the pool's first fresh slot reads the
// hash (fresh) and the others take it as their baseline, which spares each
// start a read. A slot whose variables differed would only fail its next
// check, never pass one it should not: the check compares the slot's own
// hash with it. TestReleaseUnchangedCatchesGlobals fails when two fresh
// slots of a pool hash differently.
//
// A variable that comes or goes (INSTALL or UNINSTALL PLUGIN) moves a
// write counter, and one gone fails the query: either resets the slot.
type poolGlobals struct {
	mu    sync.Mutex
	names int    // how many variables query reads; 0 until listed
	query string // SELECT CONCAT_WS(...) of their @@GLOBAL values

	freshMu sync.Mutex // held by the fresh slot reading fresh
	fresh   string     // a fresh slot's hash: "" until the first fresh slot read it
}

// globalsSep separates the values of poolGlobals' query, and globalsNull
// stands for a NULL one (CONCAT_WS skips NULLs).
const (
	globalsSep  = 0x1f
	globalsNull = 0x1e
)

// list returns the pool's query and how many values it reads, listing the
// variables on q's server if no read of the pool has.
func (g *poolGlobals) list(ctx context.Context, q querier) (string, int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.query != "" {
		return g.query, g.names, nil
	}
	rows, err := q.QueryContext(ctx, "SHOW GLOBAL VARIABLES")
	if err != nil {
		return "", 0, fmt.Errorf("list global variables: %w", err)
	}
	defer rows.Close()
	var exprs []string
	for rows.Next() {
		var name string
		var value sql.RawBytes
		if err := rows.Scan(&name, &value); err != nil {
			return "", 0, fmt.Errorf("list global variables: %w", err)
		}
		switch n := strings.ToLower(name); {
		case strings.HasPrefix(n, "gtid_"), n == "server_uid", n == "server_uuid", n == "port", n == "report_port":
			continue
		}
		exprs = append(exprs, fmt.Sprintf("IFNULL(@@GLOBAL.`%s`, 0x%02x)", strings.ReplaceAll(name, "`", "``"), globalsNull))
	}
	if err := rows.Err(); err != nil {
		return "", 0, fmt.Errorf("list global variables: %w", err)
	}
	if len(exprs) == 0 {
		return "", 0, fmt.Errorf("list global variables: the server showed none")
	}
	g.query = fmt.Sprintf("SELECT CONCAT_WS(0x%02x, %s)", globalsSep, strings.Join(exprs, ", "))
	g.names = len(exprs)
	return g.query, g.names, nil
}

// freshHash returns the hash of a fresh slot of the pool, reading it from
// q's server (whose directories are dirs) when no slot has yet.
func (g *poolGlobals) freshHash(ctx context.Context, q querier, dirs []string) (string, error) {
	g.freshMu.Lock()
	defer g.freshMu.Unlock()
	if g.fresh == "" {
		h, err := g.hash(ctx, q, dirs)
		if err != nil {
			return "", err
		}
		g.fresh = h
	}
	return g.fresh, nil
}

// hash reads and hashes q's server's global variables now (dirs: its
// slot's directories), with the query as text: for a read that is not a
// check's (serverGlobals prepares it).
func (g *poolGlobals) hash(ctx context.Context, q querier, dirs []string) (string, error) {
	query, n, err := g.list(ctx, q)
	if err != nil {
		return "", err
	}
	var values []byte
	if err := q.QueryRowContext(ctx, query).Scan(&values); err != nil {
		return "", fmt.Errorf("hash global variables: %w", err)
	}
	return globalsHash(values, n, dirs)
}

// globalsHash is the hash of the values poolGlobals' query of n variables
// returned, with the slot's directories dirs as placeholders.
func globalsHash(values []byte, n int, dirs []string) (string, error) {
	if got := bytes.Count(values, []byte{globalsSep}) + 1; got != n {
		// A value holds the separator: the hash cannot tell the values
		// apart, and a check that fails only resets.
		return "", fmt.Errorf("hash global variables: %d values for %d variables", got, n)
	}
	v := string(values)
	for i, d := range dirs {
		v = strings.ReplaceAll(v, d, "\x00dir"+strconv.Itoa(i)+"\x00")
	}
	h := sha256.Sum256([]byte(v))
	return hex.EncodeToString(h[:]), nil
}

// serverGlobals reads one server's global variables for its pool's hash
// (poolGlobals), with the pool's query prepared on the server's admin
// connections: database/sql prepares it once on each, and a statement
// of a transaction (sql.Tx.StmtContext) runs the one its connection has.
type serverGlobals struct {
	pool  *poolGlobals
	admin *sql.DB

	mu   sync.Mutex
	stmt *sql.Stmt // pool.query on admin; nil until the first read
}

// hash reads and hashes the server's global variables on conn, one of its
// admin connections, its slot's directories being dirs.
func (s *serverGlobals) hash(ctx context.Context, conn *sql.Conn, dirs []string) (string, error) {
	query, n, err := s.pool.list(ctx, conn)
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	if s.stmt == nil {
		s.stmt, err = s.admin.PrepareContext(ctx, query)
	}
	stmt := s.stmt
	s.mu.Unlock()
	if err != nil {
		return "", fmt.Errorf("hash global variables: %w", err)
	}
	tx, err := conn.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return "", fmt.Errorf("hash global variables: %w", err)
	}
	defer tx.Rollback()
	var values []byte
	if err := tx.StmtContext(ctx, stmt).QueryRowContext(ctx).Scan(&values); err != nil {
		return "", fmt.Errorf("hash global variables: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return "", fmt.Errorf("hash global variables: %w", err)
	}
	return globalsHash(values, n, dirs)
}

// close closes the prepared query.
func (s *serverGlobals) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stmt != nil {
		s.stmt.Close()
		s.stmt = nil
	}
}
