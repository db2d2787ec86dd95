package sqlload

import (
	"regexp"
	"strings"
)

// A kind says where a statement may run.
type kind int

const (
	// kindBarrier statements run alone on the main connection once every
	// statement before them has finished: DDL on databases, views, routines,
	// events, users, and anything the loader does not recognise.
	kindBarrier kind = iota
	// kindTable statements touch exactly one table and run on the worker
	// that owns it, in input order with that table's other statements.
	kindTable
	// kindSession statements change session state (SET, COMMIT); every
	// connection runs them, in input order.
	kindSession
	// kindUse changes the default database.
	kindUse
	// kindSkip statements are dropped: LOCK TABLES and UNLOCK TABLES.
	kindSkip
	// kindSerial statements need one connection for everything from here on
	// (a temporary table, an explicit transaction); they switch the load to
	// serial mode and then run as barriers.
	kindSerial
)

// class is what the loader needs to know about a statement.
type class struct {
	kind     kind
	db       string // kindTable: the table's database, "" for the current one
	table    string // kindTable: the table
	creates  bool   // the statement is CREATE TABLE
	changeDB bool   // a barrier that may change the current database
}

// fullScanLimit bounds the statements the classifier reads to the end; longer
// ones are classified from their first words only, or run as barriers.
const fullScanLimit = 1 << 20

// seqTable matches the virtual tables of MariaDB's sequence engine.
var seqTable = regexp.MustCompile(`(?i)^seq_[0-9]+_to_[0-9]+(_step_[0-9]+)?$`)

// parser reads tokens with one token of lookahead.
type parser struct {
	l   lexer
	tok token
}

func newParser(s string) *parser {
	p := &parser{l: lexer{s: s}}
	p.advance()
	return p
}

func (p *parser) advance() { p.tok = p.l.next() }

// accept consumes the keyword kw if it is next.
func (p *parser) accept(kw string) bool {
	if p.tok.is(kw) {
		p.advance()
		return true
	}
	return false
}

// punct consumes the punctuation c if it is next.
func (p *parser) punct(c string) bool {
	if p.tok.kind == tokPunct && p.tok.text == c {
		p.advance()
		return true
	}
	return false
}

// name reads a table name, optionally qualified by its database.
func (p *parser) name() (db, table string, ok bool) {
	if !p.tok.isName() {
		return "", "", false
	}
	table = p.tok.text
	p.advance()
	if p.punct(".") {
		if !p.tok.isName() {
			return "", "", false
		}
		db, table = table, p.tok.text
		p.advance()
	}
	return db, table, true
}

// skipParens skips a parenthesised group; the opening parenthesis has been
// consumed.
func (p *parser) skipParens() bool {
	for depth := 1; p.tok.kind != tokEOF; p.advance() {
		if p.tok.kind != tokPunct {
			continue
		}
		switch p.tok.text {
		case "(":
			depth++
		case ")":
			if depth--; depth == 0 {
				p.advance()
				return true
			}
		}
	}
	return false
}

// skipIfExists consumes IF [NOT] EXISTS.
func (p *parser) skipIfExists() {
	if p.accept("IF") {
		p.accept("NOT")
		p.accept("EXISTS")
	}
}

// classify decides where a statement may run.
func classify(text string) class {
	p := newParser(text)
	first := p.tok.up
	p.advance()
	switch first {
	case "INSERT", "REPLACE":
		return classifyInsert(p, text)
	case "CREATE":
		return classifyCreate(p, text)
	case "ALTER":
		p.accept("ONLINE")
		p.accept("IGNORE")
		if !p.accept("TABLE") || len(text) > fullScanLimit {
			return class{}
		}
		db, table, ok := p.name()
		if !ok || containsWord(text, "RENAME", "EXCHANGE") {
			return class{}
		}
		return class{kind: kindTable, db: db, table: table}
	case "DROP":
		if p.tok.is("DATABASE") || p.tok.is("SCHEMA") {
			return class{changeDB: true}
		}
		if !p.accept("TABLE") {
			return class{}
		}
		p.skipIfExists()
		db, table, ok := p.name()
		if !ok {
			return class{}
		}
		p.accept("RESTRICT")
		p.accept("CASCADE")
		if p.tok.kind != tokEOF {
			return class{} // more than one table
		}
		return class{kind: kindTable, db: db, table: table}
	case "TRUNCATE":
		p.accept("TABLE")
		if db, table, ok := p.name(); ok && p.tok.kind == tokEOF {
			return class{kind: kindTable, db: db, table: table}
		}
		return class{}
	case "USE":
		return class{kind: kindUse}
	case "SET":
		return classifySet(p, text)
	case "COMMIT", "ROLLBACK":
		if p.tok.is("TO") || containsWord(text, "SAVEPOINT") {
			return class{kind: kindSerial}
		}
		return class{kind: kindSession}
	case "LOCK", "UNLOCK":
		if p.tok.is("TABLES") || p.tok.is("TABLE") {
			return class{kind: kindSkip}
		}
		return class{}
	case "BEGIN", "START", "SAVEPOINT", "XA":
		return class{kind: kindSerial}
	}
	return class{}
}

// classifyInsert handles INSERT and REPLACE; the first word is consumed.
func classifyInsert(p *parser, text string) class {
	for p.accept("LOW_PRIORITY") || p.accept("DELAYED") || p.accept("HIGH_PRIORITY") || p.accept("IGNORE") {
	}
	p.accept("INTO")
	db, table, ok := p.name()
	if !ok {
		return class{}
	}
	c := class{kind: kindTable, db: db, table: table}
	if p.accept("PARTITION") {
		if !p.punct("(") || !p.skipParens() {
			return class{}
		}
	}
	if p.punct("(") {
		if p.tok.is("SELECT") || p.tok.is("WITH") {
			return selectOnly(text, c)
		}
		if !p.skipParens() {
			return class{}
		}
	}
	switch {
	case p.tok.is("VALUES") || p.tok.is("VALUE"):
		// Dumps write INSERTs of many megabytes; a short one may still hide
		// a subquery.
		if len(text) <= 64<<10 && containsWord(text, "SELECT") {
			return class{}
		}
		return c
	case p.tok.is("SET"):
		if len(text) > fullScanLimit || containsWord(text, "SELECT") {
			return class{}
		}
		return c
	case p.tok.is("SELECT") || p.tok.is("WITH") || (p.tok.kind == tokPunct && p.tok.text == "("):
		return selectOnly(text, c)
	}
	return class{}
}

// selectOnly keeps an INSERT ... SELECT on its table's worker when it reads
// nothing but the sequence engine's virtual tables and the target table
// itself; any other table might still be loading on another connection.
func selectOnly(text string, c class) class {
	if len(text) > fullScanLimit {
		return class{}
	}
	toks, _ := tokens(text, -1)
	for i := 0; i < len(toks); i++ {
		if !toks[i].is("FROM") && !toks[i].is("JOIN") && !toks[i].is("STRAIGHT_JOIN") {
			continue
		}
		i++
		if i >= len(toks) {
			return class{}
		}
		if toks[i].kind == tokPunct && toks[i].text == "(" || toks[i].is("DUAL") {
			continue
		}
		if !toks[i].isName() {
			return class{}
		}
		db, table := "", toks[i].text
		if i+2 < len(toks) && toks[i+1].text == "." && toks[i+1].kind == tokPunct && toks[i+2].isName() {
			db, table = table, toks[i+2].text
			i += 2
		}
		if !seqTable.MatchString(table) && (table != c.table || db != c.db) {
			return class{}
		}
		// A comma after the table and its alias joins another table.
		j := i + 1
		for k := 0; k < 2 && j < len(toks) && toks[j].isName() && !clauseWords[toks[j].up]; k++ {
			j++
		}
		if j < len(toks) && toks[j].kind == tokPunct && toks[j].text == "," {
			return class{}
		}
	}
	return c
}

// clauseWords may follow a table name in a FROM clause and are no alias.
var clauseWords = map[string]bool{
	"WHERE": true, "GROUP": true, "ORDER": true, "LIMIT": true, "HAVING": true, "JOIN": true,
	"INNER": true, "LEFT": true, "RIGHT": true, "CROSS": true, "STRAIGHT_JOIN": true, "NATURAL": true,
	"ON": true, "USING": true, "UNION": true, "EXCEPT": true, "INTERSECT": true, "WINDOW": true,
	"FOR": true, "LOCK": true, "INTO": true, "USE": true, "IGNORE": true, "FORCE": true, "RETURNING": true,
	"PARTITION": true,
}

// classifyCreate handles CREATE; the first word is consumed.
func classifyCreate(p *parser, text string) class {
	if p.accept("OR") {
		p.accept("REPLACE")
	}
	if p.tok.is("DEFINER") {
		// CREATE DEFINER=user TRIGGER: find the TRIGGER keyword.
		for n := 0; n < 8 && p.tok.kind != tokEOF && !p.tok.is("TRIGGER"); n++ {
			p.advance()
		}
		if !p.tok.is("TRIGGER") {
			return class{}
		}
	}
	switch {
	case p.accept("TEMPORARY"):
		return class{kind: kindSerial, creates: true}
	case p.accept("TABLE"):
		p.skipIfExists()
		db, table, ok := p.name()
		if !ok {
			return class{creates: true}
		}
		if p.tok.is("LIKE") || (p.punct("(") && p.tok.is("LIKE")) ||
			len(text) > fullScanLimit || containsWord(text, "SELECT") {
			return class{creates: true}
		}
		return class{kind: kindTable, db: db, table: table, creates: true}
	case p.accept("TRIGGER"):
		// TRIGGER name {BEFORE|AFTER} event [{FOLLOWS|PRECEDES} other] ON table
		for n := 0; n < 12 && p.tok.kind != tokEOF && !p.tok.is("ON"); n++ {
			p.advance()
		}
		if !p.accept("ON") {
			return class{}
		}
		if db, table, ok := p.name(); ok {
			return class{kind: kindTable, db: db, table: table}
		}
		return class{}
	case p.tok.is("UNIQUE") || p.tok.is("FULLTEXT") || p.tok.is("SPATIAL") || p.tok.is("INDEX"):
		// [UNIQUE|FULLTEXT|SPATIAL] INDEX [IF NOT EXISTS] name [USING type] ON table
		for n := 0; n < 10 && p.tok.kind != tokEOF && !p.tok.is("ON"); n++ {
			p.advance()
		}
		if !p.accept("ON") {
			return class{}
		}
		if db, table, ok := p.name(); ok {
			return class{kind: kindTable, db: db, table: table}
		}
	}
	return class{}
}

// classifySet tells session variables, which every connection sets, from
// global state and passwords, which change the server once.
func classifySet(p *parser, text string) class {
	if p.tok.is("GLOBAL") || p.tok.is("PASSWORD") || p.tok.is("ROLE") || p.tok.is("DEFAULT") ||
		p.tok.is("STATEMENT") || len(text) > 64<<10 ||
		containsWord(text, "GLOBAL", "@@GLOBAL", "SELECT", "PERSIST") {
		return class{}
	}
	if containsWord(text, "AUTOCOMMIT", "@@AUTOCOMMIT") {
		// Transactions that span statements hold metadata locks a later
		// statement on another connection would wait on for ever (Sakila's
		// data file: SET AUTOCOMMIT=0, inserts, CREATE TRIGGER, COMMIT).
		return class{kind: kindSerial}
	}
	return class{kind: kindSession}
}

// containsWord reports whether text has one of the unquoted words (given in
// upper case) outside strings and comments.
func containsWord(text string, words ...string) bool {
	l := lexer{s: text}
	for t := l.next(); t.kind != tokEOF; t = l.next() {
		if t.kind != tokWord {
			continue
		}
		for _, w := range words {
			if t.up == w {
				return true
			}
		}
	}
	return false
}

// excerpt is the start of a statement on one line, for error messages.
func excerpt(text string) string {
	const n = 100
	s := strings.Join(strings.Fields(text[:min(len(text), 4*n)]), " ")
	if len(s) > n {
		return s[:n] + "..."
	}
	if len(text) > 4*n {
		return s + "..."
	}
	return s
}
