package pool

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pristinedb/pristine/internal/diskuse"

	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/scratch"
	"github.com/pristinedb/pristine/internal/template"
	"github.com/pristinedb/pristine/internal/template/templatetest"
)

// compressSchema is 10,000 rows of text that compresses well.
const compressSchema = `
CREATE TABLE d (n INT PRIMARY KEY) ENGINE=InnoDB;
INSERT INTO d VALUES (0),(1),(2),(3),(4),(5),(6),(7),(8),(9);
CREATE TABLE big (id INT PRIMARY KEY, body TEXT, KEY ix_body (body(20))) ENGINE=InnoDB;
INSERT INTO big SELECT a.n + 10*b.n + 100*c.n + 1000*e.n, REPEAT(CONCAT('row ', a.n, ' of a schema that compresses; '), 12)
  FROM d a, d b, d c, d e;
`

// A pool on a zstd-compressed btrfs scratch, of a template whose InnoDB
// tables are page compressed where the server has it (MariaDB): a lease,
// a write, a release and its reset, and the next holder sees the template
// exactly (verify clean against a never-written slot). The template's
// table takes less room than it holds, measured from its extents, and
// page compression is part of the template's key.
func TestCompressedScratchAndPages(t *testing.T) {
	st := templatetest.NewScratchBuilderWith(t, scratch.Options{Size: 1 << 30, Compress: "zstd:3"})
	opt := template.BuildOptions{Profile: mariadb.DefaultProfile()}
	pageCompressed := st.Binary().Flavor == mariadb.MariaDB
	if pageCompressed {
		pc, err := st.Binary().PageCompressionOptions()
		if err != nil {
			t.Fatal(err)
		}
		plain := opt
		plain.Name, plain.InitCmd = "app", "true"
		if opt.Profile.Options, err = mariadb.MergeOptions(opt.Profile.Options, pc); err != nil {
			t.Fatal(err)
		}
		withPC := plain
		withPC.Profile = opt.Profile
		k1, err1 := st.Hash(context.Background(), plain)
		k2, err2 := st.Hash(context.Background(), withPC)
		if err1 != nil || err2 != nil || k1 == k2 {
			t.Errorf("template keys without and with page compression: %s, %s (%v, %v); want two keys", k1, k2, err1, err2)
		}
	} else if _, err := st.Binary().PageCompressionOptions(); err == nil || !strings.Contains(err.Error(), "COMPRESSION='zlib'") {
		t.Errorf("PageCompressionOptions on %s: %v; want the refusal naming COMPRESSION='zlib'", st.Binary().Flavor, err)
	}
	m := templatetest.Build(t, st, "app", compressSchema, opt)
	p, err := Up(context.Background(), st.Catalog(), st.Binary(), m, Options{Size: 2, Profile: opt.Profile})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Down(context.Background()) })
	ref := openLease(t, leaseIn(t, p))

	var table, create string
	if err := ref.QueryRow("SHOW CREATE TABLE big").Scan(&table, &create); err != nil {
		t.Fatal(err)
	}
	if got := strings.Contains(create, "`PAGE_COMPRESSED`='ON'"); got != pageCompressed {
		t.Errorf("SHOW CREATE TABLE big on a slot:\n%s\nwant `PAGE_COMPRESSED`='ON': %v", create, pageCompressed)
	}
	var opts string
	if err := ref.QueryRow("SELECT CREATE_OPTIONS FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'big'").Scan(&opts); err != nil {
		t.Fatal(err)
	}
	if got := strings.Contains(opts, "`PAGE_COMPRESSED`='ON'"); got != pageCompressed {
		t.Errorf("CREATE_OPTIONS of big: %q; want `PAGE_COMPRESSED`='ON': %v", opts, pageCompressed)
	}

	l := leaseIn(t, p)
	db := openLease(t, l)
	for _, q := range []string{"UPDATE big SET body = REVERSE(body) WHERE id % 3 = 0", "DELETE FROM big WHERE id > 9000",
		"CREATE TABLE extra (id INT PRIMARY KEY) ENGINE=InnoDB"} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.Release(context.Background(), l.ID, Dirty); err != nil {
		t.Fatal(err)
	}
	again := leaseIn(t, p)
	if again.Slot != l.Slot {
		t.Fatalf("lease after the release got slot %d; want the reset slot %d", again.Slot, l.Slot)
	}
	verifyClean(t, ref, openLease(t, again), "a write and a reset on a compressed scratch")

	u := p.DiskUse()
	t.Logf("disk use: %+v", *u)
	if u.Error != "" || u.Method != "btrfs extents" || u.TemplatePhysical == 0 || u.SlotsLogical < u.TemplateLogical {
		t.Errorf("disk use on a zstd scratch: %+v; want it measured from btrfs extents, and the slots' logical bytes at least the template's", *u)
	}
	// The schema's table is stored compressed (the server's own files,
	// most of so small a template, are kept as written: cow.Recompress).
	files, _ := filepath.Glob(filepath.Join(st.Catalog().DataDir(m.Hash), "*", "big.ibd"))
	if len(files) != 1 {
		t.Fatalf("the template's big.ibd: %v; want one file", files)
	}
	fi, err := os.Stat(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if b, err := diskuse.Measure(files[0]); err != nil || b.Physical*2 > fi.Size() {
		t.Errorf("the template's big.ibd (%d bytes) on a zstd scratch: %+v, %v; want its physical bytes under half its size (zstd, and InnoDB's page compression where the server has it)", fi.Size(), b, err)
	}
}
