INSERT INTO items (name) VALUES ('from data.sql');
