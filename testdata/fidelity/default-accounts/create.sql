-- The accounts a default mariadb-install-db leaves on a server: anonymous
-- accounts (an empty user name) on localhost and on the host's name, root
-- on the host's name, 127.0.0.1 and ::1, and the anonymous grant on test_%.
-- They are the host's, not the schema's: no copy carries them and verify
-- leaves them out (docs/fidelity.md, "Accounts"). An account on a host
-- name is also one the copy's server ignores (--skip-name-resolve), so
-- reading it there must not stop the comparison.
CREATE USER ''@'localhost';
CREATE USER ''@'fidelity-host';
CREATE USER 'root'@'fidelity-host';
GRANT ALL PRIVILEGES ON *.* TO 'root'@'fidelity-host' WITH GRANT OPTION;
CREATE USER IF NOT EXISTS 'root'@'127.0.0.1';
GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION;
CREATE USER IF NOT EXISTS 'root'@'::1';
GRANT ALL PRIVILEGES ON *.* TO 'root'@'::1' WITH GRANT OPTION;
-- mariadb-install-db writes this row directly: its account ''@'%' does not exist.
INSERT INTO mysql.db (Host, Db, User, Select_priv, Insert_priv, Update_priv, Delete_priv, Create_priv, Drop_priv)
  VALUES ('%', 'test\\_%', '', 'Y', 'Y', 'Y', 'Y', 'Y', 'Y');
FLUSH PRIVILEGES;
CREATE TABLE note (id INT NOT NULL AUTO_INCREMENT PRIMARY KEY, body TEXT) ENGINE=InnoDB;
INSERT INTO note (body) VALUES ('one'), ('two');
