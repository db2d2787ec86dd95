-- MySQL's own features (docs/fidelity.md, "MySQL"): a functional index, an
-- invisible column, CHECK constraints, a JSON column with a multi-valued
-- index, a generated column, AUTO_INCREMENT counters above the largest id,
-- a view, a trigger, a routine, an event, and an account whose default
-- role holds its privileges on this schema. Every path that makes a copy
-- must give it back as it was. The JSON is parsed from text: MySQL's
-- binary JSON keeps an integer's type (a BIGINT from arithmetic, a small
-- int from text), which CHECKSUM TABLE sees though the values are equal.
CREATE TABLE customer (
  id INT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  email VARCHAR(80) NOT NULL,
  name VARCHAR(40) NOT NULL,
  secret VARCHAR(20) INVISIBLE,
  age INT,
  prefs JSON,
  name_len INT AS (CHAR_LENGTH(name)) VIRTUAL,
  KEY ix_email_lower ((LOWER(email))),
  KEY ix_pref_ids ((CAST(prefs->'$.ids' AS UNSIGNED ARRAY))),
  CONSTRAINT ck_age CHECK (age IS NULL OR age BETWEEN 0 AND 150),
  CONSTRAINT ck_email CHECK (email LIKE '%@%') NOT ENFORCED
) ENGINE=InnoDB;
INSERT INTO customer (email, name, secret, age, prefs)
  WITH RECURSIVE n (i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 500)
  SELECT CONCAT('C', i, '@Example.com'), CONCAT('customer ', i), CONCAT('s', i), IF(i % 7 = 0, NULL, i % 90),
         CAST(CONCAT('{"ids": [', i % 5, ', ', i % 11, ', ', 100 + i, '], "vip": ', IF(i % 3 = 0, 'true', 'false'), '}') AS JSON)
  FROM n;
-- Deletes at the top of the range: the counter stays above the largest id.
DELETE FROM customer WHERE id > 480;
CREATE TABLE orders (
  id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  customer_id INT UNSIGNED NOT NULL,
  total DECIMAL(10,2) NOT NULL,
  placed DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
  note VARCHAR(40) DEFAULT (CONCAT('order of ', customer_id)),
  KEY ix_customer (customer_id),
  CONSTRAINT fk_customer FOREIGN KEY (customer_id) REFERENCES customer (id),
  CONSTRAINT ck_total CHECK (total >= 0)
) ENGINE=InnoDB;
INSERT INTO orders (customer_id, total, placed)
  WITH RECURSIVE n (i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 900)
  SELECT 1 + i % 480, i / 10, '2024-03-01 12:00:00' + INTERVAL i MINUTE FROM n;
DELETE FROM orders WHERE id > 890;
CREATE TABLE audit (id INT NOT NULL AUTO_INCREMENT PRIMARY KEY, what VARCHAR(100)) ENGINE=InnoDB;
CREATE VIEW vip AS SELECT id, email FROM customer WHERE prefs->>'$.vip' = 'true';
CREATE TRIGGER orders_ai AFTER INSERT ON orders FOR EACH ROW INSERT INTO audit (what) VALUES (CONCAT('order ', NEW.id));
CREATE FUNCTION spent(c INT UNSIGNED) RETURNS DECIMAL(12,2) READS SQL DATA RETURN (SELECT COALESCE(SUM(total), 0) FROM orders WHERE customer_id = c);
CREATE EVENT purge_audit ON SCHEDULE EVERY 1 DAY STARTS '2030-01-01 00:00:00' DISABLE DO DELETE FROM audit;
-- A role holding the schema's privileges, granted to an account as its
-- default role.
CREATE ROLE app_reader;
GRANT SELECT, EXECUTE ON app.* TO app_reader;
CREATE USER app_user@'%' IDENTIFIED BY 'app-user-pw';
GRANT app_reader TO app_user@'%';
GRANT INSERT ON app.orders TO app_user@'%';
SET DEFAULT ROLE app_reader TO app_user@'%';
