-- Which accounts belong to a schema (docs/fidelity.md, "Accounts"): the
-- definers of its objects, the accounts and roles holding privileges on it
-- and the roles granted to those. An account with global privileges only
-- (an administrator's, a backup account's) is the host's: no capture
-- carries it and verify does not compare it. Grants on other databases
-- stay behind.
CREATE TABLE item (id INT NOT NULL AUTO_INCREMENT PRIMARY KEY, name VARCHAR(40) NOT NULL, price DECIMAL(8,2)) ENGINE=InnoDB;
INSERT INTO item (name, price) VALUES ('pen', 1.50), ('ink', 7.25);
-- Out of scope: global privileges only; privileges on another database only.
CREATE USER cap@'%' IDENTIFIED BY 'cap-pw';
GRANT ALL ON *.* TO cap@'%';
CREATE USER stranger@'%' IDENTIFIED BY 'stranger-pw';
GRANT SELECT ON nowhere.* TO stranger@'%';
-- In scope as the definer of a view, with no privilege of its own here.
CREATE USER owner@'localhost' IDENTIFIED BY 'owner-pw';
CREATE DEFINER=owner@'localhost' SQL SECURITY INVOKER VIEW cheap AS SELECT id, name FROM item WHERE price < 5;
-- In scope by a table grant; its role (global privileges only) comes along
-- because it is granted to it; its grant on another database stays behind.
CREATE ROLE shop_rw;
GRANT SELECT, INSERT, UPDATE ON *.* TO shop_rw;
CREATE USER web@'%' IDENTIFIED BY 'web-pw';
GRANT SELECT ON app.item TO web@'%';
GRANT SELECT ON nowhere.* TO web@'%';
GRANT shop_rw TO web@'%';
SET DEFAULT ROLE shop_rw FOR web@'%';
