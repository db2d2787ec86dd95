INSERT INTO lists (name) VALUES ('inbox'), ('groceries');
INSERT INTO todos (list_id, title) VALUES (1, 'read the pristine docs'), (2, 'milk'), (2, 'bread');
