-- Every kind of object pristine verify compares, in the default database
SET NAMES utf8mb4;
-- (the template's) and in a second one, `other ; db`, that it references.
CREATE DATABASE `other ; db` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci COMMENT 'cross-schema target';
CREATE TABLE `other ; db`.lookup (code CHAR(2) PRIMARY KEY, label VARCHAR(40)) ENGINE=InnoDB;
INSERT INTO `other ; db`.lookup VALUES ('de', 'Deutschland'), ('fr', 'France'), ('jp', '日本');

CREATE TABLE parent (
  id INT UNSIGNED NOT NULL AUTO_INCREMENT,
  name VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
  country CHAR(2) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci,
  price DECIMAL(10,2) NOT NULL DEFAULT 0.00,
  qty INT NOT NULL DEFAULT 1,
  total DECIMAL(12,2) AS (price * qty) PERSISTENT,
  name_len INT AS (CHAR_LENGTH(name)) VIRTUAL,
  secret VARCHAR(20) INVISIBLE DEFAULT 'hidden',
  body TEXT,
  PRIMARY KEY (id),
  UNIQUE KEY uq_name (name),
  KEY ix_prefix (body(16)),
  KEY ix_len (name_len),
  KEY ix_ignored (qty) IGNORED,
  FULLTEXT KEY ft_body (body),
  CONSTRAINT ck_price CHECK (price >= 0),
  CONSTRAINT fk_country FOREIGN KEY (country) REFERENCES `other ; db`.lookup (code) ON UPDATE CASCADE
) ENGINE=InnoDB ROW_FORMAT=DYNAMIC DEFAULT CHARSET=latin1 COMMENT='parent rows' AUTO_INCREMENT=100;
INSERT INTO parent (name, country, price, qty, body) VALUES
  ('alpha', 'de', 1.50, 2, 'the quick brown fox'),
  ('beta', 'fr', 2.25, 1, 'jumps over the lazy dog'),
  ('gamma', NULL, 0, 7, NULL);
DELETE FROM parent WHERE name = 'gamma';

CREATE TABLE child (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  parent_id INT UNSIGNED NOT NULL,
  note VARCHAR(100) DEFAULT NULL,
  CONSTRAINT fk_parent FOREIGN KEY (parent_id) REFERENCES parent (id) ON DELETE CASCADE,
  CHECK (note <> '')
) ENGINE=InnoDB ROW_FORMAT=COMPACT;
INSERT INTO child (parent_id, note) VALUES (100, 'first'), (101, 'second'), (100, NULL);

CREATE TABLE places (
  id INT PRIMARY KEY,
  pt POINT NOT NULL,
  area POLYGON,
  SPATIAL KEY sp_pt (pt)
) ENGINE=InnoDB ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8;
INSERT INTO places VALUES (1, ST_GeomFromText('POINT(1 2)'), ST_GeomFromText('POLYGON((0 0,1 0,1 1,0 0))')),
  (2, ST_GeomFromText('POINT(-3.5 7)'), NULL);

CREATE TABLE events_log (
  id INT NOT NULL,
  at DATE NOT NULL,
  what VARCHAR(20),
  PRIMARY KEY (id, at)
) ENGINE=InnoDB
PARTITION BY RANGE (YEAR(at)) (
  PARTITION p2023 VALUES LESS THAN (2024),
  PARTITION p2024 VALUES LESS THAN (2025) COMMENT 'this year',
  PARTITION pmax VALUES LESS THAN MAXVALUE);
INSERT INTO events_log VALUES (1, '2023-05-01', 'a'), (2, '2024-02-29', 'b'), (3, '2031-01-01', 'c');

CREATE TABLE hashed (id INT PRIMARY KEY, v INT) ENGINE=InnoDB PARTITION BY HASH (id) PARTITIONS 3;
INSERT INTO hashed VALUES (1, 1), (2, 4), (3, 9), (4, 16);

CREATE TABLE my_isam (id INT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(10), FULLTEXT KEY (v)) ENGINE=MyISAM CHECKSUM=1 DELAY_KEY_WRITE=1;
INSERT INTO my_isam (v) VALUES ('one'), ('two'), ('three');
CREATE TABLE an_aria (id INT AUTO_INCREMENT PRIMARY KEY, v BLOB, pt POINT NOT NULL, SPATIAL KEY (pt)) ENGINE=Aria TRANSACTIONAL=1 PAGE_CHECKSUM=1;
INSERT INTO an_aria (v, pt) VALUES (x'00ff10', POINT(0, 0)), (NULL, POINT(5, 5));
CREATE TABLE a_memory (id INT PRIMARY KEY, v VARCHAR(10), KEY USING BTREE (v)) ENGINE=MEMORY MAX_ROWS=1000;

-- Names with utf8mb4 characters, spaces, backticks and dots.
CREATE TABLE `tâble ☃` (`cölumn ü` INT PRIMARY KEY, `we``ird.name` VARCHAR(5)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
INSERT INTO `tâble ☃` VALUES (1, 'x'), (2, '🐬');
CREATE TABLE `dot.ted` (id INT PRIMARY KEY) ENGINE=InnoDB;

CREATE SEQUENCE seq_orders START WITH 1000 INCREMENT BY 5 CACHE 10;
SELECT NEXTVAL(seq_orders);
CREATE SEQUENCE seq_plain NOCACHE;

CREATE VIEW v_parent AS SELECT id, name, total FROM parent WHERE qty > 0;
CREATE ALGORITHM=MERGE SQL SECURITY INVOKER VIEW v_invoker AS SELECT p.id, c.note FROM parent p JOIN child c ON c.parent_id = p.id WITH CASCADED CHECK OPTION;
CREATE ALGORITHM=TEMPTABLE DEFINER=`app_owner`@`%` SQL SECURITY DEFINER VIEW `v cross` AS SELECT p.name, l.label FROM parent p LEFT JOIN `other ; db`.lookup l ON l.code = p.country;
CREATE VIEW `other ; db`.v_back AS SELECT COUNT(*) AS n FROM parent;

DELIMITER ;;
CREATE TRIGGER tr_child_bi BEFORE INSERT ON child FOR EACH ROW
BEGIN
  IF NEW.note IS NULL THEN SET NEW.note = 'none'; END IF;
END;;
CREATE DEFINER=`app_owner`@`%` TRIGGER tr_child_bi2 BEFORE INSERT ON child FOR EACH ROW FOLLOWS tr_child_bi SET NEW.note = UPPER(NEW.note);;
CREATE TRIGGER `tr parent.au` AFTER UPDATE ON parent FOR EACH ROW INSERT INTO `other ; db`.lookup VALUES ('zz', NEW.name) ON DUPLICATE KEY UPDATE label = NEW.name;;
CREATE PROCEDURE add_child(IN p INT UNSIGNED, INOUT n VARCHAR(100))
  MODIFIES SQL DATA
  COMMENT 'adds a child'
BEGIN
  INSERT INTO child (parent_id, note) VALUES (p, n);
  SET n = CONCAT(n, '!');
END;;
CREATE DEFINER=`app_owner`@`%` FUNCTION price_of(p INT) RETURNS DECIMAL(10,2)
  DETERMINISTIC READS SQL DATA SQL SECURITY INVOKER
  RETURN (SELECT price FROM parent WHERE id = p);;
CREATE FUNCTION `other ; db`.label_of(c CHAR(2)) RETURNS VARCHAR(40) CHARSET utf8mb4 NO SQL RETURN c;;
CREATE EVENT ev_cleanup ON SCHEDULE EVERY 1 DAY STARTS '2030-01-01 00:00:00' ON COMPLETION PRESERVE DISABLE COMMENT 'nightly'
  DO DELETE FROM child WHERE note = 'none';;
CREATE DEFINER=`app_owner`@`%` EVENT ev_once ON SCHEDULE AT '2031-06-01 12:00:00' ON COMPLETION PRESERVE ENABLE DO UPDATE parent SET qty = qty + 1;;
DELIMITER ;
SET sql_mode = 'ANSI_QUOTES,NO_BACKSLASH_ESCAPES';
CREATE PROCEDURE "ansi proc"() SELECT 'a\b' AS "x";
SET sql_mode = DEFAULT;

-- Users, roles and grants the template defines.
CREATE USER app_owner@'%' IDENTIFIED BY 'owner-pw';
CREATE ROLE app_reader;
GRANT SELECT ON *.* TO app_reader;
CREATE USER reporter@localhost IDENTIFIED BY 'rep-pw' WITH MAX_QUERIES_PER_HOUR 100;
GRANT app_reader TO reporter@localhost;
SET DEFAULT ROLE app_reader FOR reporter@localhost;
GRANT ALL ON *.* TO app_owner@'%';
GRANT SELECT, INSERT (note) ON app.child TO reporter@localhost;
GRANT EXECUTE ON PROCEDURE app.add_child TO reporter@localhost;
GRANT SELECT ON `other ; db`.* TO app_reader;
