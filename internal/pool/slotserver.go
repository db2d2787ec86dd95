package pool

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/pristinedb/pristine/internal/mariadb"
)

// What a slot's server gets besides its profile and the template's
// options, so one lease cannot take more than its slot's share of the
// host (docs/security.md, "Slot resources and release"):
//
//   - its tmpdir inside its clone (slotTmpName), where the disk cap (the
//     watch and the filesystem's quota) counts temporary tables and
//     files, release --unchanged's file walk sees them, and a reset
//     removes them;
//   - a short connect_timeout, so a socket that never finishes its
//     handshake (anyone on the host can open one to the TCP port) holds
//     a connection for seconds, not the default 10;
//   - with Options.SlotMemory, ceilings a lease cannot raise on the
//     memory of one MEMORY or temporary table and of one session.

// slotTmpName is the slot server's tmpdir, a directory of its clone that
// the server is told is not a database (ignore_db_dirs).
const slotTmpName = "#pristine-tmp"

// slotConnectTimeout is a slot server's connect_timeout, in seconds: how
// long a connection may take from accept to authenticated. A client on
// the same host needs milliseconds.
const slotConnectTimeout = 2

// slotArgs makes the slot's tmpdir in its clone at data, owned as the
// clone's top directory is (the server's account), and returns the
// server options above.
func slotArgs(data string, f mariadb.Flavor, opt Options) ([]string, error) {
	tmp := filepath.Join(data, slotTmpName)
	var st syscall.Stat_t
	if err := syscall.Stat(data, &st); err != nil {
		return nil, fmt.Errorf("slot tmpdir: %w", err)
	}
	if err := os.Mkdir(tmp, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("slot tmpdir: %w", err)
	}
	if err := os.Lchown(tmp, int(st.Uid), int(st.Gid)); err != nil {
		return nil, fmt.Errorf("slot tmpdir: give %s to the server's account: %w", tmp, err)
	}
	args := []string{
		"--tmpdir=" + tmp,
		"--loose-ignore-db-dirs=" + slotTmpName,
		"--connect-timeout=" + strconv.Itoa(slotConnectTimeout),
	}
	// Per-table row counters for the in-place reset (changes.go).
	args = append(args, f.InPlaceArgs(opt.Profile.Options)...)
	return append(args, memoryArgs(opt.SlotMemory)...), nil
}

// memoryArgs are the server options of Options.SlotMemory m: one MEMORY
// table, one internal temporary table in memory, and one session's
// memory (sort and join buffers, its statements' allocations) at most m.
// The maximum-* options are ceilings SET SESSION cannot pass (it warns
// and stops at them); SET GLOBAL needs a privilege a lease lacks.
func memoryArgs(m int64) []string {
	if m <= 0 {
		return nil
	}
	v := strconv.FormatInt(m, 10)
	return []string{
		"--max-heap-table-size=" + strconv.FormatInt(min(m, 16<<20), 10),
		"--maximum-max-heap-table-size=" + v,
		"--maximum-tmp-table-size=" + v,
		"--loose-max-session-mem-used=" + v,
		"--loose-maximum-max-session-mem-used=" + v,
	}
}

// SlotArgs are the server options a slot's server gets beyond its
// profile's, for a server on data directory data: what pristine-bench
// overhead starts its bare servers with, so they differ from a slot only
// by what pristine does around them. f is the server's flavour.
func SlotArgs(data string, f mariadb.Flavor, opt Options) ([]string, error) {
	return slotArgs(data, f, opt)
}
