package pool

import (
	"testing"

	"github.com/pristinedb/pristine/internal/mariadb"
)

// Which status variables count as writes, per flavour (account.go).
func TestIsWriteCounter(t *testing.T) {
	for _, tc := range []struct {
		name          string
		mariadb, mysq bool
	}{
		{"INNODB_LSN_CURRENT", true, false},
		{"INNODB_REDO_LOG_CURRENT_LSN", false, false},
		{"HANDLER_WRITE", true, false},
		{"INNODB_ROWS_INSERTED", false, false},
		{"COM_INSERT", false, true},
		{"COM_UPDATE_MULTI", false, true},
		{"COM_CALL_PROCEDURE", false, true},
		{"COM_CREATE_TABLE", true, true},
		{"COM_CREATE_TEMPORARY_TABLE", false, false},
		{"COM_GRANT", true, true},
		{"COM_SELECT", false, false},
		{"HANDLER_READ_FIRST", false, false},
	} {
		if got := isWriteCounter(tc.name, mariadb.MariaDB); got != tc.mariadb {
			t.Errorf("MariaDB %s: %v, want %v", tc.name, got, tc.mariadb)
		}
		if got := isWriteCounter(tc.name, mariadb.MySQL); got != tc.mysq {
			t.Errorf("MySQL %s: %v, want %v", tc.name, got, tc.mysq)
		}
	}
}

// MySQL's redo spares and temporary tablespaces come and go on their own;
// a new file beside them does not.
func TestEngineDir(t *testing.T) {
	old := fileMark{"/d/data/#innodb_redo/#ib_redo25": {ino: 1}, "/d/data/app/t.ibd": {ino: 2}}
	now := fileMark{"/d/data/#innodb_redo/#ib_redo26_tmp": {ino: 3}, "/d/data/app/t.ibd": {ino: 2},
		"/d/data/#innodb_temp/temp_10.ibt": {ino: 4}, "/d/data/app/evil.frm": {ino: 5}}
	d := old.diff(now, 10)
	if len(d) != 1 || d[0] != "new /d/data/app/evil.frm" {
		t.Errorf("diff = %q, want only the planted file", d)
	}
}
