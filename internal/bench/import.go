package bench

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/pristinedb/pristine/internal/sysmem"

	"github.com/pristinedb/pristine/internal/quote"

	"github.com/pristinedb/pristine/internal/template"
	"github.com/pristinedb/pristine/internal/units"
)

// exportBatch is how many tables one FLUSH TABLES ... FOR EXPORT holds, so
// a schema of thousands of tables does not open them all at once.
const exportBatch = 500

// importer copies with transportable tablespaces: the source tables are
// exported once to a staging directory (FLUSH TABLES ... FOR EXPORT and a
// copy of their .ibd and .cfg files); each copy creates the tables,
// discards their tablespaces, copies the staged files in and imports them.
// With noIdx the staged tables have no secondary indexes and no foreign
// keys (a lean copy of the source is made first), and each copy adds them
// after the import: the write-up's method.
type importer struct {
	noIdx   bool
	db      *sql.DB
	datadir string
	stage   string
	tables  []string
	creates []string // CREATE TABLE of each copy
	after   []string // ALTER TABLE ... ADD of each table (noIdx), or ""
}

func (im *importer) row() Row {
	m := MethodImport
	if im.noIdx {
		m = MethodImportNoIdx
	}
	return Row{Method: m, Workers: 1}
}

func (im *importer) setup(ctx context.Context, srv *template.Running, scratch string) error {
	// The staged export is as large as the data: make sure it fits, also
	// in memory when the filesystem is RAM-backed.
	need := srv.Meta.Bytes
	if free := freeBytes(scratch); free < need+256<<20 || sysmem.AvailableOr(0) < need+memFloor {
		return fmt.Errorf("not enough free disk or memory to stage an export of %s", units.Bytes(need))
	}
	db, err := srv.Inst.Open("")
	if err != nil {
		return err
	}
	db.SetMaxOpenConns(1) // one session: USE and foreign_key_checks stick
	im.db, im.datadir, im.stage = db, srv.Inst.Config.Datadir, filepath.Join(scratch, "export")
	src := srv.Meta.Database()
	if im.tables, im.creates, err = template.ShowCreateTables(ctx, db, src); err != nil {
		return err
	}
	im.after = make([]string, len(im.tables))
	if im.noIdx {
		lean := "bench_lean"
		if err := im.exec(ctx, "SET SESSION foreign_key_checks=0, unique_checks=0", "CREATE DATABASE "+quote.Ident(lean), "USE "+quote.Ident(lean)); err != nil {
			return err
		}
		for i, t := range im.tables {
			create, adds := stripIndexes(im.creates[i])
			im.creates[i] = create
			if len(adds) > 0 {
				im.after[i] = "ALTER TABLE " + quote.Ident(t) + " ADD " + strings.Join(adds, ", ADD ")
			}
			if err := im.exec(ctx, create, "INSERT INTO "+quote.Ident(t)+" SELECT * FROM "+quote.Ident(src)+"."+quote.Ident(t)); err != nil {
				return err
			}
		}
		src = lean
	}
	if err := os.MkdirAll(im.stage, 0o700); err != nil {
		return err
	}
	return im.export(ctx, src)
}

// export stages the .ibd and .cfg files of every table of schema src.
func (im *importer) export(ctx context.Context, src string) error {
	for lo := 0; lo < len(im.tables); lo += exportBatch {
		batch := im.tables[lo:min(lo+exportBatch, len(im.tables))]
		names := make([]string, len(batch))
		for i, t := range batch {
			names[i] = quote.Ident(src) + "." + quote.Ident(t)
		}
		if err := im.exec(ctx, "FLUSH TABLES "+strings.Join(names, ", ")+" FOR EXPORT"); err != nil {
			return err
		}
		for _, t := range batch {
			for _, ext := range []string{".ibd", ".cfg"} {
				if err := plainCopy(filepath.Join(im.datadir, src, t+ext), filepath.Join(im.stage, t+ext)); err != nil {
					im.exec(ctx, "UNLOCK TABLES")
					return fmt.Errorf("export %s.%s: %w", src, t, err)
				}
			}
		}
		if err := im.exec(ctx, "UNLOCK TABLES"); err != nil {
			return err
		}
	}
	return nil
}

func (im *importer) copy(ctx context.Context, i int) error {
	dst := "copy" + strconv.Itoa(i)
	if err := im.exec(ctx, "SET SESSION foreign_key_checks=0", "CREATE DATABASE "+quote.Ident(dst), "USE "+quote.Ident(dst)); err != nil {
		return err
	}
	for j, t := range im.tables {
		if err := im.exec(ctx, im.creates[j], "ALTER TABLE "+quote.Ident(t)+" DISCARD TABLESPACE"); err != nil {
			return err
		}
	}
	for _, t := range im.tables {
		for _, ext := range []string{".ibd", ".cfg"} {
			if err := plainCopy(filepath.Join(im.stage, t+ext), filepath.Join(im.datadir, dst, t+ext)); err != nil {
				return fmt.Errorf("copy %s%s: %w", t, ext, err)
			}
		}
		if err := im.exec(ctx, "ALTER TABLE "+quote.Ident(t)+" IMPORT TABLESPACE"); err != nil {
			return err
		}
	}
	for _, a := range im.after {
		if a != "" {
			if err := im.exec(ctx, a); err != nil {
				return err
			}
		}
	}
	return nil
}

func (im *importer) exec(ctx context.Context, qs ...string) error {
	for _, q := range qs {
		if _, err := im.db.ExecContext(ctx, q); err != nil {
			if len(q) > 100 {
				q = q[:97] + "..."
			}
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	return nil
}

// stripIndexes removes the secondary indexes and foreign keys from a
// CREATE TABLE statement as SHOW CREATE TABLE prints it, and returns them
// as ALTER TABLE ... ADD clauses.
func stripIndexes(create string) (string, []string) {
	lines := strings.Split(create, "\n")
	if len(lines) < 3 {
		return create, nil
	}
	var keep, adds []string
	body := lines[1 : len(lines)-1]
	for _, l := range body {
		def := strings.TrimSuffix(strings.TrimSpace(l), ",")
		switch {
		case strings.HasPrefix(def, "KEY "), strings.HasPrefix(def, "UNIQUE KEY "),
			strings.HasPrefix(def, "FULLTEXT KEY "), strings.HasPrefix(def, "SPATIAL KEY "),
			strings.HasPrefix(def, "CONSTRAINT ") && strings.Contains(def, " FOREIGN KEY "):
			adds = append(adds, def)
		default:
			keep = append(keep, "  "+def)
		}
	}
	return lines[0] + "\n" + strings.Join(keep, ",\n") + "\n" + lines[len(lines)-1], adds
}

// plainCopy copies a file by reading and writing, so the filesystem cannot
// share its blocks: what IMPORT's users do with cp on most filesystems.
func plainCopy(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o660)
	if err != nil {
		return err
	}
	// The server runs as another account than a root pristine: the copy
	// must be the server's, as the file it was copied from is.
	if os.Geteuid() == 0 {
		var st syscall.Stat_t
		if err := syscall.Fstat(int(in.Fd()), &st); err == nil {
			if err := out.Chown(int(st.Uid), int(st.Gid)); err != nil {
				out.Close()
				return err
			}
		}
	}
	if _, err := io.CopyBuffer(struct{ io.Writer }{out}, struct{ io.Reader }{in}, make([]byte, 1<<20)); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
