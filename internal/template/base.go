package template

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/pristinedb/pristine/internal/mariadb"
)

// base returns an empty data directory initialised for the server and the
// profile's log size, made once and cloned by every build.
func (b *Builder) base(ctx context.Context, p mariadb.Profile) (string, error) {
	tz := b.timezoneLoader()
	key := b.baseKey(p, tz)
	dir := b.cat.BaseDir(key)
	data := filepath.Join(dir, "data")
	if _, err := os.Stat(filepath.Join(dir, "ready")); err == nil {
		return data, nil
	}
	unlock, err := b.cat.Lock("base-" + key)
	if err != nil {
		return "", err
	}
	defer unlock()
	if _, err := os.Stat(filepath.Join(dir, "ready")); err == nil {
		return data, nil
	}
	b.progress("initialising an empty %s data directory (once per server version)", b.bin.Version)
	if tz == "" && !b.NoTimezones {
		b.progress("time zone tables stay empty: %s or %s is missing", strings.Join(b.bin.TimezoneLoaders(), " or "), b.zoneinfoDir())
	}
	if err := b.cat.Discard(dir); err != nil {
		return "", err
	}
	// Searchable by the servers' account (older versions made them 0700).
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.MkdirAll(d, 0o711); err != nil {
			return "", err
		}
		if err := os.Chmod(d, 0o711); err != nil {
			return "", err
		}
	}
	if err := b.cat.Backend().MakeDir(data); err != nil {
		return "", err
	}
	id, err := b.claim(data)
	if err != nil {
		_ = b.cat.Discard(dir)
		return "", err
	}
	defer b.seal(data) // on failure: after the discard, only the release is left
	if err := b.bin.InitDatadirAs(ctx, data, id.Account); err != nil {
		_ = b.cat.Discard(dir)
		return "", err
	}
	// One clean start and stop with the profile sizes the redo log, so that
	// clones start without resizing it. The start is private (no TCP, the
	// socket in a directory only the servers' account and pristine reach),
	// and secures the accounts before anything can connect to them.
	runDir := filepath.Join(b.cat.Root().Path, "run", "base")
	defer os.RemoveAll(runDir)
	in, err := mariadb.Start(b.bin, mariadb.Config{Datadir: data, RunDir: runDir, Profile: p, Extra: []string{"--skip-networking"}, Account: &id.Account})
	if err == nil {
		if err = in.WaitReady(ctx); err == nil && tz != "" {
			err = b.loadTimezones(ctx, in, tz)
		}
		if err == nil {
			if err = b.secureOn(ctx, in, false); err == nil {
				err = in.Stop(ctx, 2*time.Minute)
			}
		}
		in.Kill()
	}
	if err == nil {
		// Read-only to every server from now on: builds clone it.
		err = b.seal(data)
	}
	if err != nil {
		_ = b.cat.Discard(dir)
		return "", fmt.Errorf("prepare base data directory: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ready"), nil, 0o600); err != nil {
		return "", err
	}
	return data, nil
}
