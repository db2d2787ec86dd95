package capture

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/pristinedb/pristine/internal/dsn"
	"github.com/pristinedb/pristine/internal/mariadb"
)

// The capture methods.
const (
	MethodLogical  = "logical"
	MethodPhysical = "physical"
	MethodAuto     = "auto"
)

// Choose resolves method ("logical", "physical" or "auto") for this source
// and the installed server bin, and says why. Physical from MySQL needs the
// clone plugin active on the source, BACKUP_ADMIN, a TCP source and the same
// MySQL release installed here (cloneBlocker). Physical from MariaDB needs mariadb-backup
// of the source's version, a source on this host whose data directory can
// be read, a MariaDB source of bin's major version (a physical copy must be
// started by the same server) and RELOAD and PROCESS. Auto takes physical
// when all of that holds, else logical; asking for physical when it cannot
// work is an error that says what is missing.
func Choose(ctx context.Context, src *Source, bin *mariadb.Binary, method string) (string, string, error) {
	switch method {
	case MethodLogical:
		return MethodLogical, "asked for", nil
	case MethodPhysical, MethodAuto, "":
	default:
		return "", "", fmt.Errorf("capture method %q: use logical, physical or auto", method)
	}
	why, how := physicalBlocker(ctx, src, bin), "mariadb-backup can copy the local source's data directory (fastest)"
	if src.Flavor.ClonePlugin() {
		why, how = cloneBlocker(ctx, src, bin), "MySQL's clone plugin can copy the source (fastest)"
	}
	if why == "" {
		if method == MethodPhysical {
			return MethodPhysical, "asked for", nil
		}
		return MethodPhysical, how, nil
	}
	if method == MethodPhysical {
		return "", "", fmt.Errorf("physical capture of %s is not possible: %s; use --method logical", src.Name(), why)
	}
	return MethodLogical, "physical is not possible: " + why, nil
}

// physicalBlocker says why a physical capture cannot work, or "".
func physicalBlocker(ctx context.Context, src *Source, bin *mariadb.Binary) string {
	tool, err := backupTool()
	if err != nil {
		return err.Error()
	}
	if !src.Flavor.MariadbBackup() {
		return "the source is not MariaDB (" + src.Version + ")"
	}
	if bin.Flavor != src.Flavor || bin.Major != src.Major || bin.Minor != src.Minor {
		return fmt.Sprintf("the source runs %d.%d but the installed server is %s: a physical copy must be started by the same version", src.Major, src.Minor, bin.Version)
	}
	if maj, min, err := backupVersion(ctx, tool); err != nil {
		return err.Error()
	} else if maj != src.Major || min != src.Minor {
		return fmt.Sprintf("mariadb-backup is for %d.%d but the source runs %d.%d", maj, min, src.Major, src.Minor)
	}
	if !dsn.IsLocal(src.Config) {
		return "the source is not on this host (mariadb-backup reads its data directory)"
	}
	if src.Datadir == "" {
		return "the source does not say where its data directory is"
	}
	if _, err := os.Stat(filepath.Join(src.Datadir, "mysql")); err != nil {
		return fmt.Sprintf("the source's data directory %s cannot be read here (is the source in a container or another host?)", src.Datadir)
	}
	if err := src.checkPhysical(); err != nil {
		return err.Error()
	}
	return ""
}
