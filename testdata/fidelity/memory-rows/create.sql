-- A MEMORY table keeps its rows only while the server runs. A template is a
-- stopped server's data directory, so no copy made from one can have them:
-- verify must show the loss (expect_differences), never hide it.
CREATE TABLE hot (id INT PRIMARY KEY, v VARCHAR(10)) ENGINE=MEMORY;
INSERT INTO hot VALUES (1, 'a'), (2, 'b');
CREATE TABLE cold (id INT PRIMARY KEY) ENGINE=InnoDB;
INSERT INTO cold VALUES (1);
