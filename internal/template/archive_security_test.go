package template_test

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pristinedb/pristine/internal/archive"
	"github.com/pristinedb/pristine/internal/catalog"
	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/template"
	"github.com/pristinedb/pristine/internal/template/templatetest"
)

// asNobody starts sh -c script as user nobody (no groups, no capabilities,
// setuid still honoured), or skips the test when not root.
func asNobody(t *testing.T, script string) *exec.Cmd {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: another local user is played by setpriv --reuid=65534")
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("needs setpriv (util-linux) to play another local user")
	}
	cmd := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all", "sh", "-c", script)
	cmd.Env = []string{"PATH=/usr/bin:/bin:/usr/sbin:/sbin", "HOME=/nonexistent"}
	return cmd
}

// plantSetuidID copies /usr/bin/id to path as a root-owned setuid file.
func plantSetuidID(t *testing.T, path string) {
	t.Helper()
	id, err := os.ReadFile("/usr/bin/id")
	if err != nil {
		t.Skipf("no /usr/bin/id to plant: %v", err)
	}
	if err := os.WriteFile(path, id, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(path, 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, fs.ModeSetuid|0o755); err != nil {
		t.Fatal(err)
	}
}

// TestImportCarriesNoSetuidRoot plays the review's attack: a crafted
// template archive holds a root-owned 4755 copy of /usr/bin/id (and
// directories of mode 0755), and user nobody runs a watcher loop that
// executes it wherever the import stages it (the test tells it every
// staging path it sees, so the watcher need not list anything). The
// watcher must never get euid 0; every staging directory the import makes
// is 0700 whenever it is seen; the published template's files carry no
// setuid, setgid or sticky bit and no access for others (but search on
// the template's directory).
func TestImportCarriesNoSetuidRoot(t *testing.T) {
	asNobody(t, "true") // skips unless root with setpriv
	src := templatetest.NewBuilder(t, "auto")
	m := templatetest.Build(t, src, "app", schema, template.BuildOptions{})
	dst := templatetest.NewBuilder(t, "auto")
	templates := filepath.Join(dst.Catalog().Root().Data(), "templates")

	// Control: on this filesystem a setuid copy of id run by nobody is
	// root, or the test proves nothing.
	work, err := os.MkdirTemp(dst.Catalog().Root().Path, "attacker-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(work, 0o777)
	plantSetuidID(t, filepath.Join(work, "id"))
	if out, err := asNobody(t, filepath.Join(work, "id")).CombinedOutput(); err != nil || !strings.Contains(string(out), "euid=0(") {
		t.Skipf("a setuid root file run by nobody here is not root (%q, %v): nosuid mount? the test would prove nothing", out, err)
	}
	os.Remove(filepath.Join(work, "id"))

	// The crafted archive: the template with id planted in its database
	// directory and every directory opened to 0755.
	dir := filepath.Join(t.TempDir(), "t")
	if out, err := exec.Command("cp", "-a", src.Catalog().Dir(m.Hash), dir).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	plantSetuidID(t, filepath.Join(dir, "data", "app", "id"))
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(p, 0o755)
		}
		return err
	})
	var raw bytes.Buffer
	if _, err := archive.Pack(context.Background(), dir, &raw, archive.PackOptions{}); err != nil {
		t.Fatal(err)
	}

	// The watcher, as nobody: run every candidate path, keep what id says.
	targets, loot := filepath.Join(work, "targets"), filepath.Join(work, "loot")
	os.WriteFile(targets, nil, 0o644)
	os.WriteFile(loot, nil, 0o666)
	os.Chmod(loot, 0o666)
	watcher := asNobody(t, `while :; do while read -r f; do "$f" >>`+loot+` 2>/dev/null; done <`+targets+`; done`)
	if err := watcher.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { watcher.Process.Kill(); watcher.Wait() }()

	// The spy, as root: every staging directory under templates/, its mode,
	// and where id would be in it, handed to the watcher.
	var stop atomic.Bool
	wide := map[string]string{}
	var seen int
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		known := map[string]bool{}
		for !stop.Load() {
			ents, _ := os.ReadDir(templates)
			var paths []string
			for _, e := range ents {
				name := e.Name()
				if !e.IsDir() || !strings.HasPrefix(name, ".") {
					continue
				}
				p := filepath.Join(templates, name)
				fi, err := os.Lstat(p)
				if err != nil {
					continue
				}
				if strings.HasPrefix(name, ".import-") {
					seen++
					if fi.Mode().Perm() != 0o700 {
						wide[name] = fi.Mode().String()
					}
				}
				paths = append(paths, filepath.Join(p, "data", "app", "id"), filepath.Join(p, "archive", "data", "app", "id"))
				inner, _ := filepath.Glob(filepath.Join(p, ".archive.unpack-*"))
				for _, u := range inner {
					paths = append(paths, filepath.Join(u, "data", "app", "id"))
				}
			}
			if key := strings.Join(paths, "\n"); len(paths) > 0 && !known[key] {
				known[key] = true
				os.WriteFile(targets+".tmp", []byte(key+"\n"), 0o644)
				os.Rename(targets+".tmp", targets)
			}
			time.Sleep(200 * time.Microsecond)
		}
	}()
	got, added, err := dst.Import(context.Background(), bytes.NewReader(raw.Bytes()), archive.UnpackOptions{})
	stop.Store(true)
	wg.Wait()
	if err != nil || !added {
		t.Fatalf("import of the crafted archive: %v", err)
	}
	// Let the watcher try the published template too.
	os.WriteFile(targets, []byte(filepath.Join(dst.Catalog().DataDir(got.Hash), "app", "id")+"\n"), 0o644)
	time.Sleep(300 * time.Millisecond)
	out, _ := os.ReadFile(loot)
	if strings.Contains(string(out), "euid=0(") {
		t.Errorf("user nobody ran the archive's setuid file as root during the import: %q", firstLine(string(out), "euid=0("))
	}
	if seen == 0 {
		t.Error("the spy never saw the import's staging directory: the test proved nothing about its mode")
	}
	if len(wide) > 0 {
		t.Errorf("a staging directory of the import was not 0700: %v", wide)
	}
	// The published template: pristine's modes only.
	var planted bool
	filepath.WalkDir(dst.Catalog().Dir(got.Hash), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil || fi.Mode()&fs.ModeSymlink != 0 {
			return err
		}
		others := fi.Mode().Perm() & 0o007
		if fi.IsDir() {
			others &^= 0o001 // the template's directory is searchable by the servers' account
		}
		if fi.Mode()&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky) != 0 || others != 0 {
			t.Errorf("%s: mode %v in the published template", p, fi.Mode())
		}
		if filepath.Base(p) == "id" {
			planted = true
			if fi.Mode() != archive.FileMode {
				t.Errorf("the planted file is %v, want pristine's %v", fi.Mode(), archive.FileMode)
			}
		}
		return nil
	})
	if !planted {
		t.Error("the planted file is not in the published template: the test proved nothing about its mode")
	}
}

func firstLine(s, sub string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			return l
		}
	}
	return ""
}

// TestImportCannotClaimAKey plays the review's finding 8: an archive whose
// meta.json claims the content key of `template build victim --from-sql
// victim.sql` (and a client key) is imported before victim is built. The
// import is filed under a key derived from its archive, answers neither
// key, and the build that follows builds for real and serves victim's rows.
// The same archive imported again, from a file, is the same template.
func TestImportCannotClaimAKey(t *testing.T) {
	attacker := templatetest.NewBuilder(t, "auto")
	evil := templatetest.Build(t, attacker, "victim", "CREATE TABLE t (v VARCHAR(20)); INSERT INTO t VALUES ('attacker');\n", template.BuildOptions{})
	st := templatetest.NewBuilder(t, "auto")
	in := writeFile(t, t.TempDir(), "victim.sql", "CREATE TABLE t (v VARCHAR(20)); INSERT INTO t VALUES ('victim');\n")
	opt := template.BuildOptions{Name: "victim", FromSQL: in, Profile: mariadb.DefaultProfile()}
	key, err := st.Hash(context.Background(), opt)
	if err != nil {
		t.Fatal(err)
	}
	raw := craft(t, attacker, evil, func(mm map[string]any) {
		mm["hash"], mm["key"] = key, "victims-client-key"
		mm["created"] = time.Now().Add(24 * time.Hour).UTC().Format(time.RFC3339Nano)
	})
	imp, added, err := st.Import(context.Background(), bytes.NewReader(raw), archive.UnpackOptions{})
	if err != nil || !added {
		t.Fatalf("import: %v", err)
	}
	if imp.Hash == key || imp.Key != "" || imp.Imported == "" || imp.Hash != catalog.ImportKey(imp.Imported) {
		t.Errorf("the import is filed under hash %s, key %q, imported %q: want a key derived from its archive, not the claimed %s", imp.Hash, imp.Key, imp.Imported, key)
	}
	if imp.Created.After(time.Now()) {
		t.Errorf("the import kept its claimed creation time %v", imp.Created)
	}
	for _, ref := range []string{key, "victims-client-key"} {
		if m, err := st.Catalog().Get(ref); err == nil {
			t.Errorf("Get(%.12s) answers with the import %s", ref, m.Hash[:12])
		}
	}
	// The same archive from a file: hashed the same way, already here.
	p := filepath.Join(t.TempDir(), "a.prsa")
	if err := os.WriteFile(p, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	again, added, err := st.Import(context.Background(), f, archive.UnpackOptions{})
	f.Close()
	if err != nil || added || again.Hash != imp.Hash {
		t.Fatalf("the same archive from a file: %v, added %v, hash %s, want %s already here", err, added, again.Hash, imp.Hash)
	}

	m, built, err := st.Build(context.Background(), opt)
	if err != nil {
		t.Fatal(err)
	}
	if !built || m.Hash != key {
		t.Fatalf("template build victim after the import: built=%v hash %s: it answered with the importer's template instead of building %s", built, m.Hash, key)
	}
	if got, err := st.Catalog().Get("victim"); err != nil || got.Hash != key {
		t.Fatalf("Get(victim) = %v, %v: want the build", got, err)
	}
	r, err := st.Start(context.Background(), m, "victim")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	db, err := r.Inst.Open("victim")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v string
	if err := db.QueryRow("SELECT v FROM t").Scan(&v); err != nil || v != "victim" {
		t.Fatalf("victim's template serves %q (%v), want victim's row", v, err)
	}
}

// TestImportTrustedKey: a caller that vouches for a key (a fleet cache,
// scratch up --move) files the template under it, and an archive claiming
// another key is refused.
func TestImportTrustedKey(t *testing.T) {
	src := templatetest.NewBuilder(t, "auto")
	m := templatetest.Build(t, src, "app", schema, template.BuildOptions{})
	var raw bytes.Buffer
	if _, err := src.Export(context.Background(), m, &raw, archive.PackOptions{}); err != nil {
		t.Fatal(err)
	}
	dst := templatetest.NewBuilder(t, "auto")
	other := strings.Repeat("ab", 32)
	if _, _, err := dst.ImportWith(context.Background(), bytes.NewReader(raw.Bytes()), template.ImportOptions{Key: other}); err == nil || !strings.Contains(err.Error(), "claims key") {
		t.Fatalf("import vouched for as %s of an archive claiming %s: %v, want refused", other[:12], m.Hash[:12], err)
	}
	got, added, err := dst.ImportWith(context.Background(), bytes.NewReader(raw.Bytes()), template.ImportOptions{Key: m.Hash})
	if err != nil || !added || got.Hash != m.Hash || got.Imported != "" {
		t.Fatalf("trusted import: %v added %v hash %s imported %q, want %s", err, added, got.Hash, got.Imported, m.Hash)
	}
	ents, _ := os.ReadDir(filepath.Join(dst.Catalog().Root().Data(), "templates"))
	for _, e := range ents {
		if e.IsDir() && strings.HasPrefix(e.Name(), ".") {
			t.Errorf("the imports left %s", e.Name())
		}
	}
}
