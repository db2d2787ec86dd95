package capture_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pristinedb/pristine/internal/template/templatetest"
	"github.com/pristinedb/pristine/internal/units"

	"github.com/pristinedb/pristine/internal/capture"
	"github.com/pristinedb/pristine/internal/dsn"
	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/mariadb/mariadbtest"
	"github.com/pristinedb/pristine/internal/template"
)

func needBackup(t *testing.T) {
	if _, err := exec.LookPath("mariadb-backup"); err != nil {
		t.Skip("mariadb-backup is not installed (apt-get install mariadb-backup): physical capture cannot be tested")
	}
}

func TestPhysicalBuildsAWorkingTemplate(t *testing.T) {
	needBackup(t)
	for _, tc := range []struct {
		name   string
		stream bool
	}{
		{"mariadb-backup writes the files", false},
		{"xbstream through pristine's reader", true},
	} {
		t.Run(tc.name, func(t *testing.T) { testPhysical(t, tc.stream) })
	}
}

func testPhysical(t *testing.T, stream bool) {
	st := templatetest.NewBuilder(t, "auto")
	srcIn := mariadbtest.Start(t)
	db := mariadbtest.Open(t, srcIn, "")
	execAll(t, db, fixture...)
	want := fingerprint(t, db)
	m, built, err := st.Build(context.Background(), template.BuildOptions{Name: "phys", Profile: mariadb.DefaultProfile(),
		Server: template.ServerSource{DSN: sourceURL(srcIn, "root", ""), Databases: []string{"shop"}, Method: "physical", Stream: stream}})
	if err != nil {
		t.Fatal(err)
	}
	if !built || m.Database() != "shop" || !strings.Contains(m.Inputs[0], "method=physical") {
		t.Fatalf("built=%v meta databases %v inputs %v", built, m.Databases, m.Inputs)
	}
	r, err := st.Start(context.Background(), m, "phys-check")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// The build account's password (in meta.json) opens nothing: the
	// build locked the account.
	build, err := sql.Open("mysql", dsn.TCP(r.Inst.Config.Port, m.User, m.Password, m.Database()))
	if err != nil {
		t.Fatal(err)
	}
	defer build.Close()
	if err := build.Ping(); err == nil {
		t.Error("the build account opens a started template with the password in meta.json")
	}
	// The copy's root accepts the store's admin secret only.
	lease, err := r.Inst.Open(m.Database())
	if err != nil {
		t.Fatal(err)
	}
	defer lease.Close()
	// The source's root objects run as the template's owner account in
	// the template (docs/security.md, "No definer gadget").
	want = strings.ReplaceAll(want, " root@localhost", " "+mariadb.OwnerUser+"@"+mariadb.OwnerHost)
	if !strings.Contains(want, mariadb.OwnerUser) {
		t.Fatal("the fixture has no object of root: the re-owning goes unchecked")
	}
	if got := fingerprint(t, lease); got != want {
		t.Errorf("the physical copy differs from the source:\n--- source\n%s--- copy\n%s", want, got)
	}
	// Only the asked-for database (and mysql) came along.
	if n := queryString(t, lease, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA='other'"); n != "0" {
		t.Errorf("database other was copied though only shop was asked for")
	}
}

func TestChoose(t *testing.T) {
	needBackup(t)
	bin := mariadbtest.Binary(t)
	srcIn := mariadbtest.Start(t)
	execAll(t, mariadbtest.Open(t, srcIn, ""),
		"CREATE DATABASE d",
		"CREATE USER 'plain'@'localhost' IDENTIFIED BY 'pw'",
		"GRANT SELECT, LOCK TABLES ON d.* TO 'plain'@'localhost'",
	)
	other := *bin
	other.Minor++
	for _, tc := range []struct {
		name, url, method string
		bin               *mariadb.Binary
		want, why         string
		err               string
	}{
		{name: "auto, root on the socket", url: sourceURL(srcIn, "root", ""), method: "auto", bin: bin, want: "physical", why: "mariadb-backup"},
		{name: "auto, no RELOAD", url: sourceURL(srcIn, "plain", "pw"), method: "auto", bin: bin, want: "logical", why: "lacks RELOAD"},
		{name: "auto, other server version", url: sourceURL(srcIn, "root", ""), method: "auto", bin: &other, want: "logical", why: "same version"},
		{name: "physical, no RELOAD", url: sourceURL(srcIn, "plain", "pw"), method: "physical", bin: bin, err: "lacks RELOAD"},
		{name: "logical", url: sourceURL(srcIn, "root", ""), method: "logical", bin: bin, want: "logical", why: "asked"},
		{name: "bad method", url: sourceURL(srcIn, "root", ""), method: "copy", bin: bin, err: "use logical, physical or auto"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := openSource(t, tc.url, "d")
			got, why, err := capture.Choose(context.Background(), src, tc.bin, tc.method)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Choose = %s, %v; want an error saying %q", got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want || !strings.Contains(why, tc.why) {
				t.Fatalf("Choose = %s (%s), %v; want %s because of %q", got, why, err, tc.want, tc.why)
			}
		})
	}
}

func TestMissingPrivilegeNamesIt(t *testing.T) {
	srcIn := mariadbtest.Start(t)
	execAll(t, mariadbtest.Open(t, srcIn, ""),
		"CREATE DATABASE d",
		"CREATE TABLE d.t (id INT PRIMARY KEY)",
		"CREATE TRIGGER d.tr BEFORE INSERT ON d.t FOR EACH ROW SET NEW.id = NEW.id",
		"CREATE DATABASE e",
		"CREATE EVENT e.ev ON SCHEDULE EVERY 1 DAY DISABLE DO SELECT 1",
		"CREATE USER 'u1'@'localhost'", "GRANT SELECT ON e.* TO 'u1'@'localhost'",
		"CREATE USER 'u2'@'localhost'", "GRANT SELECT, SHOW VIEW ON d.* TO 'u2'@'localhost'",
		"CREATE USER 'u3'@'localhost'", "GRANT SELECT, TRIGGER ON e.* TO 'u3'@'localhost'", "GRANT SELECT ON d.* TO 'u3'@'localhost'",
		"CREATE USER 'u4'@'localhost'", "GRANT SELECT, TRIGGER, EVENT ON `d%`.* TO 'u4'@'localhost'",
	)
	dst := mariadbtest.Start(t)
	for _, tc := range []struct{ user, db, want string }{
		{"u1", "d", "lacks SELECT on `d`.*"},
		{"u2", "d", "lacks TRIGGER on `d`.*"},
		{"u3", "e", "lacks EVENT on `e`.*"},
		{"u4", "d", ""}, // a LIKE pattern grant covers d
	} {
		cfg, err := dsn.Parse(sourceURL(srcIn, tc.user, ""))
		if err != nil {
			t.Fatal(err)
		}
		// Open checks the databases can be seen, Logical the rest.
		src, err := capture.Open(context.Background(), cfg, []string{tc.db})
		if err == nil {
			_, err = capture.Logical(context.Background(), src, dst.DSN(""), capture.Options{})
			src.Close()
		}
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s on %s: %v", tc.user, tc.db, err)
			}
			continue
		}
		if !errors.Is(err, capture.ErrPrivilege) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "GRANT ") {
			t.Errorf("%s on %s: %v; want ErrPrivilege saying %q and the GRANT that fixes it", tc.user, tc.db, err, tc.want)
		}
	}
}

// TestPhysicalReportsProgress calls Physical itself: the progress line
// counts the bytes that arrived, and mariadb-backup's own files are gone.
func TestPhysicalReportsProgress(t *testing.T) {
	needBackup(t)
	srcIn := mariadbtest.Start(t)
	execAll(t, mariadbtest.Open(t, srcIn, ""), fixture...)
	src := openSource(t, sourceURL(srcIn, "root", ""), "shop")
	for _, stream := range []bool{false, true} {
		datadir := filepath.Join(t.TempDir(), "data")
		if err := os.Mkdir(datadir, 0o755); err != nil {
			t.Fatal(err)
		}
		var progress bytes.Buffer
		st, err := capture.Physical(context.Background(), src, datadir, false, capture.Options{Stream: stream, Progress: &progress})
		if err != nil {
			t.Fatalf("stream=%v: %v", stream, err)
		}
		if st.Bytes < 1<<20 || !strings.Contains(progress.String(), units.Bytes(st.Bytes)) {
			t.Errorf("stream=%v: %d bytes copied, progress %q does not end with them", stream, st.Bytes, progress.String())
		}
		for _, name := range []string{"ibdata1", "shop/customer.ibd", "mysql/global_priv.MAD"} {
			if _, err := os.Stat(filepath.Join(datadir, name)); err != nil {
				t.Errorf("stream=%v: %v", stream, err)
			}
		}
		// The source's AUTO_INCREMENT counters, read at the consistent point.
		want := queryString(t, mariadbtest.Open(t, srcIn, ""), "SELECT AUTO_INCREMENT FROM information_schema.TABLES WHERE TABLE_SCHEMA='shop' AND TABLE_NAME='orders'")
		var got string
		for _, c := range st.Counters {
			if c.Schema == "shop" && c.Table == "orders" {
				got = strconv.FormatUint(c.Next, 10)
			}
		}
		if st.CountersAt != "block-commit" || want == "" || got != want {
			t.Errorf("stream=%v: counter of shop.orders %q read %s, want %s read at block-commit", stream, got, st.CountersAt, want)
		}
		if left, _ := filepath.Glob(filepath.Join(datadir, "xtrabackup_*")); len(left) > 0 || exists(filepath.Join(datadir, ".incoming")) {
			t.Errorf("stream=%v: the backup tool's files were left: %v", stream, left)
		}
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
