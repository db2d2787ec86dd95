package mariadb

import "testing"

func TestServerFile(t *testing.T) {
	for rel, want := range map[string]bool{
		"ibdata1":                 true,
		"undo001":                 true,
		"ib_logfile0":             true,
		"mysql.ibd":               true,
		"mysql/global_priv.MAD":   true,
		"#innodb_redo/#ib_redo10": true,
		"app/orders.ibd":          false,
		"app/orders.frm":          false,
		"mysql_app/t.ibd":         false,
	} {
		if got := ServerFile(rel); got != want {
			t.Errorf("ServerFile(%q) = %v, want %v", rel, got, want)
		}
	}
}

func TestKeepsRowFormat(t *testing.T) {
	for stmt, want := range map[string]bool{
		"CREATE TABLE t (id INT) ROW_FORMAT=COMPACT":                  true,
		"CREATE TABLE t (id INT) row_format = redundant":              true,
		"CREATE TABLE t (id INT) ENGINE=InnoDB ROW_FORMAT COMPRESSED": true,
		"CREATE TABLE t (id INT) KEY_BLOCK_SIZE=8":                    true,
		"CREATE TABLE t (id INT) ROW_FORMAT=DYNAMIC":                  false,
		"CREATE TABLE t (id INT)":                                     false,
	} {
		if got := KeepsRowFormat(stmt); got != want {
			t.Errorf("KeepsRowFormat(%q) = %v, want %v", stmt, got, want)
		}
	}
}
