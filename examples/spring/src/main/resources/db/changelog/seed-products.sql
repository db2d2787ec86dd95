INSERT INTO product (name, price_cents)
SELECT CONCAT('product-', n), n * 100
FROM (WITH RECURSIVE s (n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < 200) SELECT n FROM s) AS seq;
