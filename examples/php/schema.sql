CREATE TABLE accounts (
  id INT AUTO_INCREMENT PRIMARY KEY,
  owner VARCHAR(100) NOT NULL,
  balance_cents BIGINT NOT NULL DEFAULT 0,
  UNIQUE KEY (owner)
) ENGINE=InnoDB;
CREATE TABLE transfers (
  id INT AUTO_INCREMENT PRIMARY KEY,
  from_id INT NOT NULL,
  to_id INT NOT NULL,
  cents BIGINT NOT NULL,
  FOREIGN KEY (from_id) REFERENCES accounts (id),
  FOREIGN KEY (to_id) REFERENCES accounts (id)
) ENGINE=InnoDB;
INSERT INTO accounts (owner, balance_cents) VALUES ('alice', 10000), ('bob', 5000), ('carol', 0);
