-- Accounts whose grants name the template's schema. A copy of the schema
-- under another name (--dbs-per-slot) would leave them pointing at the
-- original, so that mode must refuse them.
CREATE TABLE account (id INT PRIMARY KEY, balance DECIMAL(12,2) NOT NULL) ENGINE=InnoDB;
INSERT INTO account VALUES (1, 10.00), (2, -3.50);
CREATE USER teller@localhost IDENTIFIED BY 'teller-pw';
GRANT SELECT, UPDATE (balance) ON app.account TO teller@localhost;
CREATE ROLE auditor;
GRANT SELECT ON app.* TO auditor;
GRANT auditor TO teller@localhost;
