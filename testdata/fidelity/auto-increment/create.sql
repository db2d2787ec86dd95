-- AUTO_INCREMENT counters that are not the largest id + 1. InnoDB reserves
-- ids for INSERT ... SELECT in batches (2,000 rows leave the counter at
-- 2048, 20,000 at 32768) and persists only the ids rows took; deletes at the
-- top of the range leave the counter above the largest id. A test's next
-- INSERT must get the id it would get on the source, in every copy.
CREATE TABLE customer (
  id INT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  name VARCHAR(40) NOT NULL
) ENGINE=InnoDB;
INSERT INTO customer (name) SELECT CONCAT('customer ', seq) FROM seq_1_to_2000;
CREATE TABLE orders (
  id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  customer_id INT UNSIGNED NOT NULL,
  total DECIMAL(10,2) NOT NULL,
  KEY ix_customer (customer_id),
  CONSTRAINT fk_customer FOREIGN KEY (customer_id) REFERENCES customer (id)
) ENGINE=InnoDB;
INSERT INTO orders (customer_id, total) SELECT 1 + seq % 1900, seq / 100 FROM seq_1_to_20000;
-- Interleaved deletes at the top of each range, and a second batch after them.
DELETE FROM orders WHERE id > 19900 AND id % 3 = 0;
DELETE FROM orders WHERE id > 19990;
INSERT INTO orders (customer_id, total) SELECT 1 + seq, seq FROM seq_1_to_300;
DELETE FROM orders WHERE id > 32900;
DELETE FROM customer WHERE id > 1995 OR id = 1990;
-- Single-row inserts, the top ones deleted: the counter stays at 11.
CREATE TABLE ticket (id INT NOT NULL AUTO_INCREMENT PRIMARY KEY, subject VARCHAR(20)) ENGINE=InnoDB;
INSERT INTO ticket (subject) VALUES ('a'), ('b'), ('c'), ('d'), ('e'), ('f'), ('g'), ('h'), ('i'), ('j');
DELETE FROM ticket WHERE id > 7;
-- Emptied after a batch: the counter stays up while no row is left.
CREATE TABLE scratch (id INT NOT NULL AUTO_INCREMENT PRIMARY KEY, v INT) ENGINE=InnoDB;
INSERT INTO scratch (v) SELECT seq FROM seq_1_to_100;
DELETE FROM scratch;
