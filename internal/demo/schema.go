package demo

// spec describes one table of the demo schema at scale 1.
type spec struct {
	name    string
	rows    int
	parents []string // tables its foreign keys reference, each created earlier
	shape   string   // columns after id and the foreign keys, one letter each (see columns)
}

// specs is the schema, parents before children: a shop with its catalogue,
// customers, orders and back office. Rows at scale 1: 29 tables of 1,500,
// 12 of 4,000, 6 of 20,000 and 4 of 50,000.
var specs = []spec{
	{"regions", 1500, nil, "cnsd"},
	{"currencies", 1500, nil, "cnxfd"},
	{"categories", 1500, nil, "cntfd"},
	{"brands", 1500, nil, "nmfd"},
	{"suppliers", 1500, []string{"regions"}, "cnepsdt"},
	{"warehouses", 1500, []string{"regions"}, "cnwsd"},
	{"carriers", 1500, nil, "cnpfd"},
	{"tax_rates", 1500, []string{"regions"}, "cxfdu"},
	{"departments", 1500, nil, "cnmd"},
	{"employees", 1500, []string{"departments", "regions"}, "nepbsdu"},
	{"tags", 1500, nil, "cnd"},
	{"price_lists", 1500, []string{"currencies"}, "cnsdu"},
	{"coupons", 1500, nil, "cxsadu"},
	{"campaigns", 1500, nil, "nsatdu"},
	{"channels", 1500, nil, "cnfd"},
	{"languages", 1500, nil, "cnfd"},
	{"stores", 1500, []string{"regions", "warehouses"}, "cnpsdj"},
	{"payment_methods", 1500, nil, "cnfdj"},
	{"units", 1500, nil, "cnxd"},
	{"attributes", 1500, nil, "cnsjd"},
	{"banners", 1500, []string{"campaigns"}, "nmsdu"},
	{"faq_entries", 1500, []string{"languages"}, "ntfdu"},
	{"cms_pages", 1500, []string{"languages"}, "cntsdu"},
	{"shipping_zones", 1500, []string{"regions"}, "cnad"},
	{"return_reasons", 1500, nil, "cnfd"},
	{"ticket_types", 1500, nil, "cnsd"},
	{"roles", 1500, nil, "cnmd"},
	{"permissions", 1500, []string{"roles"}, "cnfd"},
	{"api_clients", 1500, nil, "cnesdu"},

	{"products", 4000, []string{"categories", "brands", "suppliers"}, "cnatwjsdu"},
	{"product_attributes", 4000, []string{"products", "attributes"}, "mxd"},
	{"product_tags", 4000, []string{"products", "tags"}, "fd"},
	{"prices", 4000, []string{"products", "price_lists"}, "aqdu"},
	{"stock_levels", 4000, []string{"products", "warehouses"}, "qwdu"},
	{"users", 4000, []string{"roles"}, "nepbfsdu"},
	{"addresses", 4000, []string{"regions"}, "nmpsdu"},
	{"supplier_contacts", 4000, []string{"suppliers"}, "nepmdu"},
	{"purchase_orders", 4000, []string{"suppliers", "warehouses", "employees"}, "casdut"},
	{"promotions", 4000, []string{"campaigns", "coupons"}, "naxsdu"},
	{"tickets", 4000, []string{"ticket_types", "employees"}, "ntsdu"},
	{"product_images", 4000, []string{"products"}, "mwxfd"},

	{"customers", 20000, []string{"regions", "languages"}, "nepbsfdjum"},
	{"carts", 20000, []string{"customers", "stores"}, "aqsdu"},
	{"wishlists", 20000, []string{"customers", "products"}, "nfmd"},
	{"invoices", 20000, []string{"customers", "currencies"}, "caxsdut"},
	{"reviews", 20000, []string{"products", "customers"}, "xtfsd"},
	{"subscriptions", 20000, []string{"customers", "price_lists"}, "asfdu"},

	{"orders", 50000, []string{"customers", "stores", "channels"}, "casqdumjt"},
	{"order_items", 50000, []string{"orders", "products"}, "qaxwdt"},
	{"payments", 50000, []string{"orders", "payment_methods", "currencies"}, "casdumt"},
	{"shipments", 50000, []string{"orders", "carriers", "warehouses"}, "cwsdut"},
}

// column is one kind of column: its definition and the expression that fills
// it from the sequence number seq and the table's salt {K}.
type column struct {
	name, def, expr string
}

// columns maps shape letters to columns. Expressions are deterministic
// functions of seq (the row number) and {K} (a per-table salt); {P} is a
// per-table code prefix.
var columns = map[byte]column{
	'c': {"code", "VARCHAR(24) NOT NULL", "CONCAT('{P}-', LPAD(seq, 8, '0'))"},
	'n': {"name", "VARCHAR(80) NOT NULL", "CONCAT(ELT(1 + (seq * 7 + {K}) % 10, 'North', 'Blue', 'Prime', 'Rapid', 'Silver', 'Urban', 'Green', 'Bright', 'Classic', 'Nova'), ' ', SUBSTR(MD5(seq + {K}), 1, 6 + seq % 14))"},
	'e': {"email", "VARCHAR(120) NOT NULL", "CONCAT('user', seq, '.', {K}, '@example.', ELT(1 + seq % 3, 'com', 'org', 'net'))"},
	'p': {"phone", "VARCHAR(20) NULL", "IF(seq % 5 = 0, NULL, CONCAT('+1-555-', LPAD((seq * 7919 + {K}) % 10000000, 7, '0')))"},
	's': {"status", "ENUM('new','active','paused','closed') NOT NULL DEFAULT 'new'", "ELT(1 + (seq * 31 + {K}) % 4, 'new', 'active', 'paused', 'closed')"},
	'a': {"amount", "DECIMAL(12,2) NOT NULL", "((seq * 7919 + {K} * 13) % 1000000) / 100"},
	'q': {"quantity", "SMALLINT UNSIGNED NOT NULL", "1 + (seq * 17 + {K}) % 50"},
	'd': {"created_at", "DATETIME NOT NULL", "TIMESTAMP'2020-01-01 00:00:00' + INTERVAL ((seq * 7919 + {K} * 104729) % 157680000) SECOND"},
	'u': {"updated_at", "DATETIME NULL", "IF(seq % 3 = 0, NULL, TIMESTAMP'2024-01-01 00:00:00' + INTERVAL ((seq * 6007 + {K}) % 31536000) SECOND)"},
	't': {"description", "TEXT NULL", "IF(seq % 4 = 0, NULL, REPEAT(CONCAT(MD5(seq + {K}), ' '), 1 + seq % 7))"},
	'j': {"attributes", "JSON NULL", "JSON_OBJECT('color', ELT(1 + seq % 5, 'red', 'green', 'blue', 'black', 'white'), 'size', seq % 40, 'tags', JSON_ARRAY(SUBSTR(MD5(seq), 1, 5), SUBSTR(MD5(seq + {K}), 1, 7)))"},
	'f': {"is_active", "TINYINT(1) NOT NULL DEFAULT 1", "(seq * 13 + {K}) % 7 <> 0"},
	'x': {"score", "DOUBLE NOT NULL", "((seq * 2654435761 + {K}) % 100000) / 1000"},
	'm': {"notes", "VARCHAR(255) NULL", "IF(seq % 2 = 0, NULL, CONCAT('note ', SUBSTR(SHA1(seq + {K}), 1, 20 + seq % 20)))"},
	'b': {"birth_date", "DATE NULL", "IF(seq % 9 = 0, NULL, DATE'1950-01-01' + INTERVAL ((seq * 97 + {K}) % 20000) DAY)"},
	'w': {"weight_grams", "INT UNSIGNED NOT NULL", "(seq * 7919 + {K}) % 50000"},
}
