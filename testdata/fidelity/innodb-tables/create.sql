-- InnoDB tables only: what --dbs-per-slot copies inside one server. Every
-- part of a table definition, with rows, must come out the same in each copy.
SET NAMES utf8mb4;
CREATE DATABASE shared_ref CHARACTER SET utf8mb4;
CREATE TABLE shared_ref.country (code CHAR(2) CHARACTER SET ascii PRIMARY KEY, name VARCHAR(40)) ENGINE=InnoDB;
INSERT INTO shared_ref.country VALUES ('de', 'Deutschland'), ('is', 'Ísland');

CREATE TABLE author (
  id INT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  name VARCHAR(80) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci NOT NULL,
  country CHAR(2) CHARACTER SET ascii,
  born DATE,
  bio MEDIUMTEXT,
  name_upper VARCHAR(80) AS (UPPER(name)) VIRTUAL,
  initials CHAR(2) AS (LEFT(name, 2)) STORED,
  tag VARCHAR(10) INVISIBLE DEFAULT 'x',
  UNIQUE KEY uq_name (name),
  KEY ix_name_upper (name_upper),
  KEY ix_bio (bio(20)),
  KEY ix_born (born) IGNORED,
  FULLTEXT KEY ft_bio (bio),
  CONSTRAINT fk_country FOREIGN KEY (country) REFERENCES shared_ref.country (code),
  CONSTRAINT ck_born CHECK (born > '1000-01-01')
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COMMENT='writers' AUTO_INCREMENT=500;
INSERT INTO author (name, country, born, bio) VALUES
  ('Halldór Laxness', 'is', '1902-04-23', 'Icelandic novelist, Nobel prize 1955'),
  ('Thomas Mann', 'de', '1875-06-06', 'German novelist; Buddenbrooks 🏠'),
  ('Nobody', NULL, NULL, NULL);
DELETE FROM author WHERE name = 'Nobody';

CREATE TABLE book (
  id BIGINT NOT NULL AUTO_INCREMENT,
  author_id INT UNSIGNED NOT NULL,
  title VARCHAR(200) NOT NULL,
  price DECIMAL(8,2) NOT NULL DEFAULT 9.99,
  pages SMALLINT UNSIGNED,
  cover BLOB,
  PRIMARY KEY (id),
  KEY ix_author (author_id, title(10)),
  CONSTRAINT fk_author FOREIGN KEY (author_id) REFERENCES author (id) ON DELETE CASCADE ON UPDATE RESTRICT,
  CHECK (pages > 0)
) ENGINE=InnoDB ROW_FORMAT=COMPACT;
INSERT INTO book (author_id, title, price, pages, cover) VALUES
  (500, 'Sjálfstætt fólk', 12.50, 500, x'89504e47'), (501, 'Der Zauberberg', 15, 1000, NULL);

CREATE TABLE shop (
  id INT PRIMARY KEY,
  loc POINT NOT NULL,
  zone POLYGON,
  SPATIAL KEY sp_loc (loc)
) ENGINE=InnoDB ROW_FORMAT=REDUNDANT;
INSERT INTO shop VALUES (1, POINT(64.1, -21.9), NULL), (2, POINT(52.5, 13.4), ST_GeomFromText('POLYGON((0 0,2 0,2 2,0 0))'));

CREATE TABLE `odd name ☃.v1` (`we``ird col` INT PRIMARY KEY, `dot.col` VARCHAR(3)) ENGINE=InnoDB ROW_FORMAT=COMPRESSED;
INSERT INTO `odd name ☃.v1` VALUES (1, 'a'), (2, 'ß');

CREATE TABLE empty_auto (id INT AUTO_INCREMENT PRIMARY KEY) ENGINE=InnoDB AUTO_INCREMENT=42;
