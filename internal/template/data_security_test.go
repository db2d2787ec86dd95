package template_test

// The attacker's tests of "A template is data" (docs/security.md): what an
// archive's meta.json may say, and no secret in an archive.

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pristinedb/pristine/internal/archive"
	"github.com/pristinedb/pristine/internal/catalog"
	"github.com/pristinedb/pristine/internal/dsn"
	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/template"
	"github.com/pristinedb/pristine/internal/template/templatetest"
)

// TestImportRefusesServerOptions imports crafted archives whose meta.json
// carries server options that load code (a plugin from the archive's own
// data directory), turn off the grant tables or TLS, run a file, or write
// logs where they like, in every spelling the server takes: each is
// refused with an error naming the option, before any server starts, and
// nothing is published. Options a template may carry import.
func TestImportRefusesServerOptions(t *testing.T) {
	src := templatetest.NewBuilder(t, "auto")
	m := templatetest.Build(t, src, "app", schema, template.BuildOptions{})
	dst := templatetest.NewBuilder(t, "auto")
	for _, opts := range [][]string{
		{"plugin-dir=/proc/self/cwd/app", "plugin-load-add=evil.so"},
		{"plugin_load_add=evil.so"},
		{"--loose-plugin-dir=/proc/self/cwd/app"},
		{"require-secure-transport=OFF"},
		{"loose_require_secure_transport=OFF"},
		{"skip-grant-tables"},
		{"skip_grant_tables"},
		{"init-file=/proc/self/cwd/app/evil.sql"},
		{"general-log=1", "general-log-file=/tmp/general.log"},
		{"enable-general-log"},
		{"slow-query-log-file=/tmp/slow.log"},
		{"log-error=/tmp/evil.log"},
		{"maximum-log-bin=/tmp/bin"},
		{"SSL_CERT=/tmp/cert.pem"},
	} {
		t.Run(opts[0], func(t *testing.T) {
			raw := craft(t, src, m, func(mm map[string]any) {
				mm["server_options"] = append(append([]string(nil), m.ServerOptions...), opts...)
			})
			_, _, err := dst.Import(context.Background(), bytes.NewReader(raw), archive.UnpackOptions{})
			if !errors.Is(err, mariadb.ErrServerOption) || !strings.Contains(err.Error(), opts[0]) {
				t.Fatalf("import of an archive with server options %q: %v, want refused naming %s", opts, err, opts[0])
			}
			if all, err := dst.Catalog().List(); err != nil || len(all) != 0 {
				t.Fatalf("a refused import published %d templates (%v)", len(all), err)
			}
		})
	}
	good := []string{"character-set-server=latin1", "collation-server=latin1_swedish_ci", "sql_mode=ANSI_QUOTES"}
	raw := craft(t, src, m, func(mm map[string]any) { mm["server_options"] = good })
	got, _, err := dst.Import(context.Background(), bytes.NewReader(raw), archive.UnpackOptions{})
	if err != nil || strings.Join(got.ServerOptions, " ") != strings.Join(good, " ") {
		t.Fatalf("import of an archive with allowed options: %v (options %q)", err, got.ServerOptions)
	}
}

// TestBuildRefusesServerOptions: a build asked for an option a template may
// not carry (from the command line or any other caller of the builder) is
// refused before anything starts, naming the option.
func TestBuildRefusesServerOptions(t *testing.T) {
	st := templatetest.NewBuilder(t, "auto")
	in := writeFile(t, t.TempDir(), "app.sql", schema)
	prof := mariadb.DefaultProfile()
	prof.Options = append(prof.Options, "plugin-load-add=evil.so")
	_, _, err := st.Build(context.Background(), template.BuildOptions{Name: "app", FromSQL: in, Profile: prof})
	if !errors.Is(err, mariadb.ErrServerOption) || !strings.Contains(err.Error(), "plugin-load-add=evil.so") {
		t.Fatalf("build with plugin-load-add: %v, want refused naming it", err)
	}
}

// exportedMeta exports template m and returns the meta.json in the archive.
func exportedMeta(t *testing.T, st *template.Builder, m *catalog.Meta) []byte {
	t.Helper()
	var raw bytes.Buffer
	if _, err := st.Export(context.Background(), m, &raw, archive.PackOptions{}); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "unpacked")
	if _, err := archive.Unpack(context.Background(), bytes.NewReader(raw.Bytes()), dir, archive.UnpackOptions{}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, catalog.MetaFile))
	if err != nil {
		t.Fatal(err)
	}
	if m.Password != "" && bytes.Contains(raw.Bytes(), []byte(m.Password)) {
		t.Errorf("the archive of template %s holds its build account's password", m.Name)
	}
	return b
}

// TestExportCarriesNoPassword: an exported template's meta.json (what
// `template export` writes and `template push` and a fleet cache upload)
// has no password field, and the archive holds the build account's
// password nowhere.
func TestExportCarriesNoPassword(t *testing.T) {
	st := templatetest.NewBuilder(t, "auto")
	m := templatetest.Build(t, st, "app", schema, template.BuildOptions{})
	if m.Password == "" {
		t.Fatal("the build recorded no password: the test would prove nothing")
	}
	var mm map[string]any
	if err := json.Unmarshal(exportedMeta(t, st, m), &mm); err != nil {
		t.Fatal(err)
	}
	if _, ok := mm["password"]; ok {
		t.Errorf("the exported meta.json has a password field: %v", mm["password"])
	}
	if mm["name"] != "app" || mm["hash"] != m.Hash {
		t.Errorf("the exported meta.json does not describe the template: %v", mm)
	}
}

// TestImportDropsPassword plays an archive made to plant a login: its data
// directory's build account pristine@'%' is unlocked with a password the
// attacker knows, and its meta.json names that password. The import
// keeps no password from the archive (the template records none), and the
// password opens nothing on a clone of the imported template.
func TestImportDropsPassword(t *testing.T) {
	ctx := context.Background()
	const planted = "Planted-pw-4e7c1a"
	src := templatetest.NewBuilder(t, "auto")
	m := templatetest.Build(t, src, "app", schema, template.BuildOptions{})

	// The attacker unlocks the build account with its password on a clone,
	// stops it cleanly and packs the clone with a meta.json that says so.
	r, err := src.Start(ctx, m, "craft")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	admin, err := r.Inst.Open("")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec("ALTER USER 'pristine'@'%' IDENTIFIED BY '" + planted + "' ACCOUNT UNLOCK"); err != nil {
		t.Fatal(err)
	}
	admin.Close()
	if err := login(r.Inst.Config.Port, planted); err != nil {
		t.Fatalf("control: the planted password does not open the attacker's own clone (%v): the test would prove nothing", err)
	}
	if err := r.Inst.Stop(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "t")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-a", r.Inst.Config.Datadir, filepath.Join(dir, "data")).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	meta := *m
	meta.Password = planted
	b, _ := json.Marshal(&meta)
	if err := os.WriteFile(filepath.Join(dir, catalog.MetaFile), b, 0o600); err != nil {
		t.Fatal(err)
	}
	var raw bytes.Buffer
	if _, err := archive.Pack(ctx, dir, &raw, archive.PackOptions{}); err != nil {
		t.Fatal(err)
	}

	dst := templatetest.NewBuilder(t, "auto")
	got, _, err := dst.Import(ctx, bytes.NewReader(raw.Bytes()), archive.UnpackOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Password != "" || got.User != "pristine" {
		t.Errorf("the imported template records account %q with password %q: want pristine and none", got.User, got.Password)
	}
	if disk, err := os.ReadFile(filepath.Join(dst.Catalog().Dir(got.Hash), catalog.MetaFile)); err != nil || bytes.Contains(disk, []byte(planted)) {
		t.Errorf("the store's meta.json of the import holds the archive's password (%v)", err)
	}
	clone, err := dst.Start(ctx, got, "slot")
	if err != nil {
		t.Fatal(err)
	}
	defer clone.Close()
	if err := login(clone.Inst.Config.Port, planted); err == nil {
		t.Error("the archive's password opens its build account on a clone of the imported template")
	}
}

// login connects as the build account over TCP with password pw.
func login(port int, pw string) error {
	db, err := sql.Open("mysql", dsn.TCP(port, "pristine", pw, ""))
	if err != nil {
		return err
	}
	defer db.Close()
	return db.Ping()
}
