ALTER TABLE product ADD COLUMN category VARCHAR(50);
UPDATE product SET category = IF(id % 2 = 0, 'even', 'odd');
CREATE INDEX product_category ON product (category);
