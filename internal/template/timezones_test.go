package template_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/template"
	"github.com/pristinedb/pristine/internal/template/templatetest"
)

// Time zone tables are in the base data directory by default, so named
// zones work in every template (CONVERT_TZ is NULL without them);
// NoTimezones leaves them empty, in a base of its own.
// On MySQL the loader is MySQL's own mysql_tzinfo_to_sql, into its InnoDB
// tables.
func TestTimezoneTables(t *testing.T) {
	if _, err := os.Stat(template.ZoneinfoDir); err != nil {
		t.Skipf("%s is missing (package tzdata)", template.ZoneinfoDir)
	}
	st := templatetest.NewBuilder(t, "auto")
	loaders := st.Binary().TimezoneLoaders()
	if _, err := exec.LookPath(loaders[0]); err != nil {
		t.Skipf("%s is not installed: run scripts/install-deps.sh", loaders[0])
	}
	st.NoTimezones = false // the default of pristine's commands (templatetest turns it off)
	convert := func(name string) string {
		out := filepath.Join(t.TempDir(), "tz.txt")
		cmd := st.Binary().Client("mariadb") + ` --no-defaults -N -h"$MYSQL_HOST" -P"$MYSQL_PORT" -u"$MYSQL_USER" -e "SELECT CONVERT_TZ('2020-07-01 12:00:00', 'UTC', 'Europe/Paris')" > ` + out
		if _, _, err := st.Build(context.Background(), template.BuildOptions{Name: name, InitCmd: cmd, Profile: mariadb.DefaultProfile()}); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	if got := convert("tz"); got != "2020-07-01 14:00:00" {
		t.Errorf("CONVERT_TZ to Europe/Paris with time zone tables: %q, want 2020-07-01 14:00:00", got)
	}
	hash, err := st.Hash(context.Background(), template.BuildOptions{Name: "tz", InitCmd: "true", Profile: mariadb.DefaultProfile()})
	if err != nil {
		t.Fatal(err)
	}
	st.NoTimezones = true
	if h, err := st.Hash(context.Background(), template.BuildOptions{Name: "tz", InitCmd: "true", Profile: mariadb.DefaultProfile()}); err != nil || h == hash {
		t.Errorf("a template's hash with NoTimezones: %s, %v; without: %s: it must differ", h, err, hash)
	}
	if got := convert("notz"); got != "NULL" {
		t.Errorf("CONVERT_TZ with --no-timezones: %q, want NULL (empty tables)", got)
	}
	bases, err := os.ReadDir(filepath.Join(st.Catalog().Root().Data(), "base"))
	if err != nil {
		t.Fatal(err)
	}
	if len(bases) != 2 {
		t.Errorf("%d base data directories, want 2: the base cache is keyed by the time zone tables", len(bases))
	}
}
