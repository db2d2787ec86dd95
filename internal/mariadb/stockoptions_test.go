package mariadb

import (
	"strings"
	"testing"
)

// TestStockOptions: each server family and version gets what its
// package's option files set beyond its compiled defaults, and nothing
// else: Debian's utf8mb4_general_ci for MariaDB before 11.6 only.
func TestStockOptions(t *testing.T) {
	for _, tc := range []struct {
		b    *Binary
		want string
	}{
		{&Binary{Flavor: MariaDB, Major: 10, Minor: 6}, "character-set-server=utf8mb4 collation-server=utf8mb4_general_ci"},
		{&Binary{Flavor: MariaDB, Major: 10, Minor: 11}, "character-set-server=utf8mb4 collation-server=utf8mb4_general_ci"},
		{&Binary{Flavor: MariaDB, Major: 11, Minor: 4}, "character-set-server=utf8mb4 collation-server=utf8mb4_general_ci"},
		{&Binary{Flavor: MariaDB, Major: 11, Minor: 8}, ""},
		{&Binary{Flavor: MariaDB, Major: 12, Minor: 0}, ""},
		{&Binary{Flavor: MySQL, Major: 8, Minor: 4}, ""},
		{&Binary{Flavor: MySQL, Major: 9, Minor: 7}, ""},
		{nil, ""},
	} {
		if got := strings.Join(tc.b.StockOptions(), " "); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.b, got, tc.want)
		}
	}
}

// TestLayerOptions: a template's options replace the stock ones of the
// same name however spelled, in place; a character set without a
// collation takes its own default collation, not the stock one; laying
// the result over the stock options again changes nothing (a slot starts
// with the stock options and the template's recorded ones).
func TestLayerOptions(t *testing.T) {
	stock := []string{"character-set-server=utf8mb4", "collation-server=utf8mb4_general_ci"}
	for _, tc := range []struct {
		name string
		own  []string
		want string
	}{
		{"none", nil, "character-set-server=utf8mb4 collation-server=utf8mb4_general_ci"},
		{"a collation", []string{"collation_server=utf8mb4_unicode_ci"}, "character-set-server=utf8mb4 collation_server=utf8mb4_unicode_ci"},
		{"a character set alone", []string{"character-set-server=latin1"}, "character-set-server=latin1"},
		{"both", []string{"collation-server=latin1_bin", "character-set-server=latin1"}, "collation-server=latin1_bin character-set-server=latin1"},
		{"loose- and another option", []string{"loose-collation-server=utf8mb4_bin", "sql-mode=ANSI"}, "character-set-server=utf8mb4 loose-collation-server=utf8mb4_bin sql-mode=ANSI"},
	} {
		got := LayerOptions(stock, tc.own)
		if strings.Join(got, " ") != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
		if again := LayerOptions(stock, got); strings.Join(again, " ") != strings.Join(got, " ") {
			t.Errorf("%s: laid over the stock options again: %q, want %q", tc.name, again, got)
		}
	}
	if stock[1] != "collation-server=utf8mb4_general_ci" {
		t.Error("LayerOptions changed its base")
	}
}
