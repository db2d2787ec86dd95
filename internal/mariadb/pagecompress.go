package mariadb

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
)

// PageCompressionOptions are the server options that make every InnoDB
// table a server of b creates page compressed (template build
// --innodb-compression): MariaDB's innodb_compression_default=ON, which
// gives new tables PAGE_COMPRESSED=1, with zlib (compiled into every
// build) pinned so the template's key says what compressed it. InnoDB
// writes each page compressed and punches the rest of the page out of the
// file, so the filesystem must punch holes (btrfs, XFS, ext4 and tmpfs
// do). MySQL has no server-wide switch (its COMPRESSION= is a per-table
// attribute): refused, with what to do instead.
func (b *Binary) PageCompressionOptions() ([]string, error) {
	if b.Flavor != MariaDB {
		return nil, fmt.Errorf("--innodb-compression: %s has no server-wide InnoDB page compression (innodb_compression_default is MariaDB's); give the tables COMPRESSION='zlib' in the schema instead, or compress the storage with \"pristine scratch up --compress zstd\"", b.Flavor)
	}
	return []string{"innodb-compression-default=ON", "innodb-compression-algorithm=zlib"}, nil
}

// keepsRowFormat matches a statement that names a row format InnoDB does
// not page compress: it refuses ROW_FORMAT=COMPRESSED (which KEY_BLOCK_SIZE
// implies) and REDUNDANT, and stores a page-compressed COMPACT table as
// DYNAMIC, which changes what the table keeps inline and its row size
// limit.
var keepsRowFormat = regexp.MustCompile(`(?i)\bROW_FORMAT\s*=?\s*(COMPACT|REDUNDANT|COMPRESSED)\b|\bKEY_BLOCK_SIZE\s*=?\s*[1-9]`)

// KeepsRowFormat reports whether the CREATE TABLE statement stmt names a
// row format InnoDB does not page compress (COMPACT, REDUNDANT,
// COMPRESSED, or a KEY_BLOCK_SIZE): a build that page-compresses its
// tables (PageCompressionOptions) creates that table with
// innodb_compression_default off, so it keeps the row format it names.
func KeepsRowFormat(stmt string) bool { return keepsRowFormat.MatchString(stmt) }

// ServerFile reports whether rel, a path relative to a data directory, is
// one of the server's own files rather than a schema's: the system and
// undo tablespaces, the redo log and the Aria log (directly in the data
// directory), the mysql schema, MySQL's #innodb_redo. Every slot's server
// reads them as it starts, so a compressed template keeps them as written
// (cow.Recompress): decompressing them cost every slot's start, and they
// are a small part of a large template.
func ServerFile(rel string) bool {
	dir := filepath.Dir(filepath.Clean(rel))
	return dir == "." || dir == "mysql" || strings.HasPrefix(dir, "#")
}
