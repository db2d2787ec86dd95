package sqlload

import (
	"strings"
	"testing"
)

func TestClassify(t *testing.T) {
	tbl := func(db, table string) class { return class{kind: kindTable, db: db, table: table} }
	create := func(db, table string) class { return class{kind: kindTable, db: db, table: table, creates: true} }
	tests := []struct {
		in   string
		want class
	}{
		// Statements on one table.
		{"INSERT INTO `t` VALUES (1,'a'),(2,'b')", tbl("", "t")},
		{"insert ignore into db.t (a, b) values (1, 2)", tbl("db", "t")},
		{"INSERT LOW_PRIORITY t PARTITION (p0) (a) VALUE (1)", tbl("", "t")},
		{"REPLACE INTO `my db`.`a``b` VALUES (1)", tbl("my db", "a`b")},
		{"INSERT INTO t SET a = 1, b = 'x'", tbl("", "t")},
		{"INSERT INTO t (a, b) SELECT seq, seq * 2 FROM seq_1_to_1000", tbl("", "t")},
		{"INSERT INTO t SELECT s.seq FROM seq_1_to_10_step_2 AS s JOIN seq_1_to_3 x ON 1 WHERE s.seq > 1", tbl("", "t")},
		{"INSERT INTO t SELECT * FROM (SELECT seq FROM seq_0_to_9) d", tbl("", "t")},
		{"INSERT INTO t SELECT a + 1 FROM t", tbl("", "t")},
		{"CREATE TABLE `t` (\n  `id` int NOT NULL,\n  PRIMARY KEY (`id`)\n) ENGINE=InnoDB", create("", "t")},
		{"CREATE TABLE IF NOT EXISTS d.t (id INT, c VARCHAR(10) DEFAULT 'select')", create("d", "t")},
		{"CREATE OR REPLACE TABLE c (p INT, FOREIGN KEY (p) REFERENCES parent (id))", create("", "c")},
		{"/*!40000 ALTER TABLE `t` DISABLE KEYS */", tbl("", "t")},
		{"ALTER TABLE t ADD INDEX (a), ADD CONSTRAINT f FOREIGN KEY (p) REFERENCES q (id)", tbl("", "t")},
		{"DROP TABLE IF EXISTS `t`", tbl("", "t")},
		{"/*!50001 DROP TABLE IF EXISTS `v`*/", tbl("", "v")},
		{"TRUNCATE TABLE d.t", tbl("d", "t")},
		{"CREATE UNIQUE INDEX i ON t (a, b)", tbl("", "t")},
		{"CREATE INDEX IF NOT EXISTS i USING BTREE ON d.t (a)", tbl("d", "t")},
		{"/*!50003 CREATE*/ /*!50017 DEFINER=`root`@`localhost`*/ /*!50003 TRIGGER `trg` BEFORE INSERT ON `t` FOR EACH ROW SET NEW.a = 1 */", tbl("", "t")},
		{"CREATE TRIGGER trg AFTER UPDATE ON d.t FOR EACH ROW FOLLOWS other INSERT INTO log VALUES (1)", tbl("d", "t")},

		// Session state.
		{"/*!40101 SET NAMES utf8mb4 */", class{kind: kindSession}},
		{"/*!40101 SET @OLD_SQL_MODE=@@SQL_MODE, SQL_MODE='NO_AUTO_VALUE_ON_ZERO' */", class{kind: kindSession}},
		{"/*!50003 SET character_set_client  = utf8mb4 */ ", class{kind: kindSession}},
		{"SET SESSION time_zone = '+00:00'", class{kind: kindSession}},
		{"SET autocommit=0", class{kind: kindSerial}},
		{"COMMIT", class{kind: kindSession}},
		{"USE `shop`", class{kind: kindUse}},
		{"LOCK TABLES `t` WRITE", class{kind: kindSkip}},
		{"UNLOCK TABLES", class{kind: kindSkip}},

		// One connection from here on.
		{"CREATE TEMPORARY TABLE tmp (a INT)", class{kind: kindSerial, creates: true}},
		{"START TRANSACTION", class{kind: kindSerial}},
		{"BEGIN", class{kind: kindSerial}},
		{"ROLLBACK TO SAVEPOINT s", class{kind: kindSerial}},

		// Barriers.
		{"SET GLOBAL max_connections = 10", class{}},
		{"SET @@global.sql_mode = ''", class{}},
		{"SET PASSWORD FOR u = PASSWORD('x')", class{}},
		{"SET @n = (SELECT COUNT(*) FROM t)", class{}},
		{"DROP DATABASE IF EXISTS d", class{changeDB: true}},
		{"/*!40000 DROP DATABASE IF EXISTS `d`*/", class{changeDB: true}},
		{"CREATE DATABASE /*!32312 IF NOT EXISTS*/ `d` /*!40100 DEFAULT CHARACTER SET utf8mb4 */", class{}},
		{"DROP TABLE a, b", class{}},
		{"DROP VIEW IF EXISTS v", class{}},
		{"CREATE TABLE t LIKE s", class{creates: true}},
		{"CREATE TABLE t (LIKE s)", class{creates: true}},
		{"CREATE TABLE t AS SELECT * FROM s", class{creates: true}},
		{"CREATE TABLE t (a INT) SELECT a FROM s", class{creates: true}},
		{"ALTER TABLE t RENAME TO u", class{}},
		{"ALTER TABLE t EXCHANGE PARTITION p WITH TABLE u", class{}},
		{"RENAME TABLE a TO b", class{}},
		{"INSERT INTO t SELECT * FROM other", class{}},
		{"INSERT INTO t SELECT * FROM seq_1_to_3, other", class{}},
		{"INSERT INTO t SELECT * FROM seq_1_to_3 s, other", class{}},
		{"INSERT INTO t SELECT * FROM seq_1_to_3 JOIN other", class{}},
		{"INSERT INTO t SELECT TRIM(LEADING 'x' FROM 'xa') FROM seq_1_to_3", class{}},
		{"INSERT INTO t (SELECT a FROM other)", class{}},
		{"INSERT INTO t VALUES ((SELECT MAX(a) FROM other))", class{}},
		{"INSERT INTO t SET a = (SELECT 1 FROM other)", class{}},
		{"UPDATE t SET a = 1", class{}},
		{"DELETE FROM t", class{}},
		{"/*!50001 CREATE ALGORITHM=UNDEFINED */ /*!50013 DEFINER=`root`@`localhost` SQL SECURITY DEFINER */ /*!50001 VIEW `v` AS SELECT 1 */", class{}},
		{"CREATE DEFINER=`root`@`localhost` PROCEDURE `p`() BEGIN SELECT 1; END", class{}},
		{"/*!50106 CREATE*/ /*!50117 DEFINER=`root`@`localhost`*/ /*!50106 EVENT `e` ON SCHEDULE EVERY 1 DAY DO SELECT 1 */", class{}},
		{"GRANT ALL ON *.* TO u", class{}},
		{"CALL p()", class{}},
		{"SELECT 1", class{}},
		{"/*!99999 nothing */", class{}},
	}
	for _, tt := range tests {
		if got := classify(tt.in); got != tt.want {
			t.Errorf("classify(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

func TestClassifyLongInsertReadsOnlyItsHead(t *testing.T) {
	// A dump's INSERT of many megabytes: the words SELECT and FROM in its
	// data must not matter, and classifying must not read it all.
	in := "INSERT INTO `t` VALUES " + strings.Repeat("(1,'select x from y'),", 1<<17) + "(2,'z')"
	if got, want := classify(in), (class{kind: kindTable, table: "t"}); got != want {
		t.Fatalf("classify = %+v, want %+v", got, want)
	}
}

func TestExcerpt(t *testing.T) {
	tests := []struct{ in, want string }{
		{"SELECT\n  1", "SELECT 1"},
		{"INSERT INTO t VALUES " + strings.Repeat("(1),", 100), "INSERT INTO t VALUES " + strings.Repeat("(1),", 19) + "(1)..."},
	}
	for _, tt := range tests {
		if got := excerpt(tt.in); got != tt.want {
			t.Errorf("excerpt(%.30q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
