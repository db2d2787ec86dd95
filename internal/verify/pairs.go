package verify

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strings"
)

// systemSchemas are the server's own; they are never compared.
var systemSchemas = map[string]bool{"mysql": true, "information_schema": true, "performance_schema": true, "sys": true}

// ParsePairs reads --schema-map values: "app=app_2", several separated by
// commas or given one by one.
func ParsePairs(specs []string) ([]Pair, error) {
	var out []Pair
	for _, spec := range specs {
		for _, s := range strings.Split(spec, ",") {
			if s = strings.TrimSpace(s); s == "" {
				continue
			}
			a, b, ok := strings.Cut(s, "=")
			if !ok || a == "" || b == "" {
				return nil, fmt.Errorf("schema map %q: write SOURCE=TARGET, e.g. app=app_2", s)
			}
			out = append(out, Pair{Source: a, Target: b})
		}
	}
	return out, nil
}

// ResolvePairs decides which schemas to compare. Explicit pairs win. When
// both sides name a database (a DSN's path, a lease), those two are
// compared. When one does, it is compared with the same name on the other
// side, or with the other side's only schema. Otherwise every non-system
// schema is compared with the one of the same name, and when each side has
// exactly one schema the other lacks, those two are paired.
func ResolvePairs(ctx context.Context, src, dst *sql.DB, srcDB, dstDB string, explicit []Pair) ([]Pair, error) {
	if len(explicit) > 0 {
		return explicit, nil
	}
	if srcDB != "" && dstDB != "" {
		return []Pair{{srcDB, dstDB}}, nil
	}
	a, err := userSchemas(ctx, src)
	if err != nil {
		return nil, fmt.Errorf("list source schemas: %w", err)
	}
	b, err := userSchemas(ctx, dst)
	if err != nil {
		return nil, fmt.Errorf("list target schemas: %w", err)
	}
	one := func(named string, other []string, side string) ([]Pair, error) {
		for _, s := range other {
			if s == named {
				return []Pair{{named, named}}, nil
			}
		}
		if len(other) == 1 {
			if side == "source" {
				return []Pair{{other[0], named}}, nil
			}
			return []Pair{{named, other[0]}}, nil
		}
		return nil, fmt.Errorf("the %s has %d schemas (%s) and none is called %s: say which with --schema-map SOURCE=TARGET", side, len(other), strings.Join(other, ", "), named)
	}
	switch {
	case dstDB != "":
		return one(dstDB, a, "source")
	case srcDB != "":
		return one(srcDB, b, "target")
	}
	inB := map[string]bool{}
	for _, s := range b {
		inB[s] = true
	}
	var pairs []Pair
	var onlyA, onlyB []string
	for _, s := range a {
		if inB[s] {
			pairs = append(pairs, Pair{s, s})
			delete(inB, s)
		} else {
			onlyA = append(onlyA, s)
		}
	}
	for s := range inB {
		onlyB = append(onlyB, s)
	}
	sort.Strings(onlyB)
	if len(onlyA) == 1 && len(onlyB) == 1 {
		return append(pairs, Pair{onlyA[0], onlyB[0]}), nil
	}
	// Unpaired schemas are compared with nothing: they show as missing or
	// extra databases.
	for _, s := range onlyA {
		pairs = append(pairs, Pair{s, s})
	}
	for _, s := range onlyB {
		pairs = append(pairs, Pair{s, s})
	}
	if len(pairs) == 0 {
		return nil, fmt.Errorf("neither side has a schema besides the server's own: nothing to compare")
	}
	return pairs, nil
}

func userSchemas(ctx context.Context, db *sql.DB) ([]string, error) {
	rows, err := db.QueryContext(ctx, "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA ORDER BY SCHEMA_NAME")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		if !systemSchemas[s] {
			out = append(out, s)
		}
	}
	return out, rows.Err()
}
