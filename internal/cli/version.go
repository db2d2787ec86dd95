package cli

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/pristinedb/pristine/internal/mariadb"
)

// Version and Commit are set at link time by scripts/build.sh:
//
//	go build -ldflags "-X github.com/pristinedb/pristine/internal/cli.Version=v0.3.0 -X ...cli.Commit=abc123"
//
// When they are not, versionText falls back to the VCS details Go records in
// the binary.
var (
	Version = ""
	Commit  = ""
)

// versionText is what `pristine --version` prints: pristine's version and
// commit, the Go that built it, and the server pristine would start.
func versionText(ctx context.Context) string {
	v, c := versionCommit()
	srv := "server: none found (apt-get install mariadb-server, or set PRISTINE_MARIADBD)"
	if b, err := mariadb.FindBinary(ctx); err == nil {
		srv = fmt.Sprintf("server: %s %s", b.Path, b.Version)
	} else if err != mariadb.ErrNoServer {
		srv = "server: " + err.Error()
	}
	return fmt.Sprintf("pristine %s (commit %s, %s %s/%s)\n%s\n", v, c, runtime.Version(), runtime.GOOS, runtime.GOARCH, srv)
}

// versionCommit is pristine's version and its commit (12 digits, "-dirty"
// when built from a changed tree), "devel" and "unknown" where neither the
// link nor Go's build information says.
func versionCommit() (v, c string) {
	v, c, dirty := Version, Commit, false
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if c == "" {
					c = s.Value
				}
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	if v == "" {
		v = "devel"
	}
	if c == "" {
		c = "unknown"
	} else if len(c) > 12 {
		c = c[:12]
	}
	if dirty && Commit == "" {
		c += "-dirty"
	}
	return v, c
}
