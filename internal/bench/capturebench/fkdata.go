package capturebench

import (
	"bufio"
	"fmt"
	"io"
)

// fkTable is one table of the foreign-key-heavy dataset: rows come from
// the sequence engine in chunks of 100000.
type fkTable struct {
	name, create string
	rows         int64
	// sel selects one row per seq value.
	sel string
}

// fkTables describes the dataset at a scale (1 = about 5.2 million rows).
func fkTables(scale float64) []fkTable {
	n := func(x int64) int64 { return max(int64(float64(x)*scale), 10) }
	cust, prod, ord := n(200000), n(10000), n(1000000)
	return []fkTable{
		{"customer", "CREATE TABLE customer (id INT PRIMARY KEY, name VARCHAR(40) NOT NULL, email VARCHAR(60) NOT NULL, created DATETIME NOT NULL, KEY (email)) ENGINE=InnoDB",
			cust, "SELECT seq, CONCAT('customer ', seq), CONCAT('c', seq, '@example.com'), '2020-01-01' + INTERVAL seq MINUTE"},
		{"product", "CREATE TABLE product (id INT PRIMARY KEY, name VARCHAR(40) NOT NULL, price DECIMAL(10,2) NOT NULL) ENGINE=InnoDB",
			prod, "SELECT seq, CONCAT('product ', seq), (seq % 997) / 10 + 1"},
		{"orders", "CREATE TABLE orders (id INT PRIMARY KEY, customer_id INT NOT NULL, placed DATETIME NOT NULL, status TINYINT NOT NULL, KEY (placed), FOREIGN KEY (customer_id) REFERENCES customer (id)) ENGINE=InnoDB",
			ord, fmt.Sprintf("SELECT seq, 1 + seq %% %d, '2021-01-01' + INTERVAL seq SECOND, seq %% 5", cust)},
		{"order_item", "CREATE TABLE order_item (id INT PRIMARY KEY, order_id INT NOT NULL, product_id INT NOT NULL, qty INT NOT NULL, price DECIMAL(10,2) NOT NULL, FOREIGN KEY (order_id) REFERENCES orders (id), FOREIGN KEY (product_id) REFERENCES product (id)) ENGINE=InnoDB",
			2 * ord, fmt.Sprintf("SELECT seq, 1 + seq %% %d, 1 + seq %% %d, 1 + seq %% 4, (seq %% 997) / 10", ord, prod)},
		{"payment", "CREATE TABLE payment (id INT PRIMARY KEY, order_id INT NOT NULL, amount DECIMAL(10,2) NOT NULL, paid DATETIME NOT NULL, FOREIGN KEY (order_id) REFERENCES orders (id)) ENGINE=InnoDB",
			ord, fmt.Sprintf("SELECT seq, 1 + seq %% %d, (seq %% 9973) / 10, '2021-01-01' + INTERVAL seq SECOND", ord)},
		{"shipment", "CREATE TABLE shipment (id INT PRIMARY KEY, order_id INT NOT NULL, carrier VARCHAR(20) NOT NULL, FOREIGN KEY (order_id) REFERENCES orders (id)) ENGINE=InnoDB",
			n(800000), fmt.Sprintf("SELECT seq, 1 + seq %% %d, ELT(1 + seq %% 3, 'post', 'ups', 'dhl')", ord)},
	}
}

// writeFKSQL writes the dataset's SQL: tables with foreign keys, filled from
// the sequence engine.
func writeFKSQL(w io.Writer, scale float64) error {
	bw := bufio.NewWriter(w)
	bw.WriteString("SET foreign_key_checks=0, unique_checks=0;\n")
	ts := fkTables(scale)
	for _, t := range ts {
		fmt.Fprintf(bw, "%s;\n", t.create)
	}
	for _, t := range ts {
		for lo := int64(1); lo <= t.rows; lo += 100000 {
			hi := min(lo+99999, t.rows)
			fmt.Fprintf(bw, "INSERT INTO %s %s FROM seq_%d_to_%d;\n", t.name, t.sel, lo, hi)
		}
	}
	return bw.Flush()
}
