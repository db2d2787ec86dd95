-- The template database's own options, set by the SQL (ALTER DATABASE
-- without a name changes the current one), and a table created after them
-- that takes its character set from the database.
ALTER DATABASE CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci COMMENT 'books and authors';
SET NAMES utf8mb4;
CREATE TABLE note (id INT PRIMARY KEY, body VARCHAR(40)) ENGINE=InnoDB;
INSERT INTO note VALUES (1, 'Þórbergur'), (2, 'ascii');
