CREATE TABLE users (
  id INT AUTO_INCREMENT PRIMARY KEY,
  email VARCHAR(200) NOT NULL UNIQUE,
  karma INT NOT NULL DEFAULT 0
);
INSERT INTO users (email, karma) VALUES ('ada@example.com', 10), ('grace@example.com', 20);
