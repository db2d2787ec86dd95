package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/mariadb/mariadbtest"
)

// TestInitCmdWithoutWatchIsRefused plays a user whose init command loads
// a migration that no --watch names: the template would be keyed by the
// command's text alone, and the build after the migration changes would
// find the old template. template build and template key refuse it (exit
// 2) naming --watch and --allow-stale, before any server starts.
func TestInitCmdWithoutWatchIsRefused(t *testing.T) {
	noSpawn(t)
	root := filepath.Join(t.TempDir(), "root")
	for _, cmd := range []string{"build", "key"} {
		r := pristine(t, root, "", "template", cmd, "app", "--init-cmd", "mariadb < migrations/001.sql")
		if r.code != ExitBadInput || !strings.Contains(r.err, "--watch") || !strings.Contains(r.err, "--allow-stale") {
			t.Errorf("template %s --init-cmd without --watch: exit %d, stderr %q; want %d naming --watch and --allow-stale", cmd, r.code, r.err, ExitBadInput)
		}
	}
}

// TestInitCmdTemplateFollowsItsMigrations: an init command keyed by the
// migrations it reads (--watch) gets a new template when a migration
// changes between two builds, with the new migration's data; with
// --allow-stale and no --watch the build runs, keyed by the command.
func TestInitCmdTemplateFollowsItsMigrations(t *testing.T) {
	if _, err := mariadb.FindBinary(context.Background()); err != nil {
		t.Skipf("no server binary: %v", err)
	}
	noSpawn(t)
	root := filepath.Join(mariadbtest.TestDir(t), "root")
	dir := t.TempDir()
	mig := filepath.Join(dir, "001.sql")
	write := func(v string) {
		if err := os.WriteFile(mig, []byte("CREATE TABLE canary (v VARCHAR(20)); INSERT INTO canary VALUES ('"+v+"');\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	init := `mariadb -u"$MYSQL_USER" "$MYSQL_DATABASE" < ` + mig
	build := func(extra ...string) string {
		t.Helper()
		r := pristine(t, root, "", append([]string{"--no-timezones", "template", "build", "app", "--init-cmd", init}, extra...)...)
		if r.code != 0 || !strings.Contains(r.out, "template app built") {
			t.Fatalf("template build %v: exit %d, stdout %q, stderr %q; want a new build", extra, r.code, r.out, r.err)
		}
		return r.out
	}
	write("one")
	first := build("--watch", dir)
	write("two")
	if second := build("--watch", dir); second == first {
		t.Fatalf("the build after the migration changed: %q, want another template than %q", second, first)
	}
	build("--allow-stale")
}
