// Package todo is the example's code under test: to-do lists in MariaDB.
// Its tests (todo_test.go) each get a pristine database from a pristine
// daemon through pristinetest.New.
package todo

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"sort"
)

// Migrations are the SQL files that define the schema, applied in name order.
//
//go:embed migrations/*.sql
var Migrations embed.FS

// Migrate applies every migration to db (opened with multiStatements=true).
func Migrate(ctx context.Context, db *sql.DB) error {
	names, err := Migrations.ReadDir("migrations")
	if err != nil {
		return err
	}
	sort.Slice(names, func(i, j int) bool { return names[i].Name() < names[j].Name() })
	for _, n := range names {
		b, err := Migrations.ReadFile("migrations/" + n.Name())
		if err != nil {
			return err
		}
		if _, err := db.ExecContext(ctx, string(b)); err != nil {
			return fmt.Errorf("migration %s: %w", n.Name(), err)
		}
	}
	return nil
}

// Add adds a to-do to a list and returns its id.
func Add(ctx context.Context, db *sql.DB, list, title string) (int64, error) {
	res, err := db.ExecContext(ctx, "INSERT INTO todos (list_id, title) SELECT id, ? FROM lists WHERE name = ?", title, list)
	if err != nil {
		return 0, fmt.Errorf("add to %s: %w", list, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return 0, fmt.Errorf("add to %s: no such list", list)
	}
	return res.LastInsertId()
}

// Open counts the to-dos of a list that are not done.
func Open(ctx context.Context, db *sql.DB, list string) (int, error) {
	var n int
	err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM todos t JOIN lists l ON l.id = t.list_id WHERE l.name = ? AND NOT t.done", list).Scan(&n)
	return n, err
}

// Finish marks a to-do done.
func Finish(ctx context.Context, db *sql.DB, id int64) error {
	_, err := db.ExecContext(ctx, "UPDATE todos SET done = TRUE WHERE id = ?", id)
	return err
}
