package mariadb

import (
	"fmt"
	"strconv"
	"strings"
)

// Profile is the throwaway-server configuration: durability against a
// machine crash off, small memory. Sizes are in bytes.
type Profile struct {
	BufferPool  int64 // innodb_buffer_pool_size
	LogFileSize int64 // innodb_log_file_size; a template and its slots must agree
	// MySQLRedo is MySQL's innodb_redo_log_capacity when set (0 means
	// LogFileSize). MySQL resizes its redo log at start and writes all of
	// it out, so a slot runs at the minimum (DefaultProfile) while builds
	// keep LogFileSize (BuildProfile); MariaDB ignores it.
	MySQLRedo      int64
	MaxConnections int
	TableCache     int   // table_open_cache
	KeyBuffer      int64 // key_buffer_size (MyISAM)
	AriaCache      int64 // aria_pagecache_buffer_size
	// LazyCommit writes InnoDB's redo log about once a second instead of
	// at every commit (innodb_flush_log_at_trx_commit=0): a killed server
	// loses up to a second of committed transactions. Off (=2), a commit
	// is in the operating system's page cache when it returns, so it
	// survives the server or pristine being killed (not the machine
	// crashing: nothing is fsynced either way). Template builds use it;
	// slots do not, since a lease outlives a daemon restart with the
	// holder's data.
	LazyCommit bool
	// Options are the template's server options, KEY=VALUE without the
	// leading dashes: its own (--server-option, a capture's source) laid
	// over the stock options of the server (Binary.ServerOptions), which
	// a build records. They are given last, over the stock options
	// again, so they win. A template records them, and its slots start
	// with the same.
	Options []string
}

// DefaultProfile is the profile of pool slots: about 50 MB of resident memory
// for an idle instance.
func DefaultProfile() Profile {
	return Profile{
		BufferPool:     16 << 20,
		LogFileSize:    48 << 20,
		MySQLRedo:      mysqlMinRedo,
		MaxConnections: 64,
		TableCache:     400,
		KeyBuffer:      1 << 20,
		AriaCache:      1 << 20,
	}
}

// BuildProfile is the profile of a server that loads a template: the same
// log size as the slots, a larger buffer pool so loading does not thrash.
func BuildProfile(slot Profile) Profile {
	p := slot
	if p.BufferPool < 256<<20 {
		p.BufferPool = 256 << 20
	}
	p.MaxConnections = 200
	p.MySQLRedo = 0
	// A build that is killed is thrown away: its commits need not survive.
	p.LazyCommit = true
	return p
}

// Key is a stable text form of the parts of the profile that change the
// bytes of a data directory; it feeds template content hashes.
func (p Profile) Key() string {
	k := fmt.Sprintf("log=%d", p.LogFileSize)
	if len(p.Options) > 0 {
		k += " options=" + strings.Join(p.Options, " ")
	}
	return k
}

// args renders the profile as server options for b: those both flavours
// spell the same, then the flavour's own (flavor.go), then the stock
// options of b's package with the template's Options over them, last so
// they win (stock.go).
func (p Profile) args(b *Binary) []string {
	f := MariaDB
	if b != nil {
		f = b.Flavor
	}
	a := []string{
		"--innodb-buffer-pool-size=" + strconv.FormatInt(p.BufferPool, 10),
		"--innodb-flush-log-at-trx-commit=" + p.flushLogAtTrxCommit(),
		"--innodb-doublewrite=0",
		// No fsync at all: a slot is thrown away, not recovered, and a
		// template is stopped cleanly before it is copied. MySQL documents
		// nosync as unsupported; with O_DIRECT_NO_FSYNC, the nearest it
		// supports, its in-place reset took about a quarter longer and a
		// soak gave 22 fresh copies a second against 29 (docs/benchmarks.md,
		// "MySQL without fsync").
		"--innodb-flush-method=nosync",
		"--innodb-use-native-aio=0",
		"--innodb-read-io-threads=1",
		"--innodb-write-io-threads=1",
		"--innodb-buffer-pool-dump-at-shutdown=0",
		"--innodb-buffer-pool-load-at-startup=0",
		"--innodb-stats-persistent=0",
		"--innodb-log-buffer-size=" + strconv.FormatInt(min(p.LogFileSize/8, 2<<20), 10),
		// Internal temporary tables (information_schema queries among them)
		// spill to disk sooner; user MEMORY tables keep their default limit.
		"--tmp-table-size=" + strconv.FormatInt(4<<20, 10),
		"--max-connections=" + strconv.Itoa(p.MaxConnections),
		"--table-open-cache=" + strconv.Itoa(p.TableCache),
		"--key-buffer-size=" + strconv.FormatInt(p.KeyBuffer, 10),
		"--performance-schema=0",
		"--skip-log-bin",
		"--skip-name-resolve",
		"--host-cache-size=0",
		"--sync-binlog=0",
	}
	if f == MySQL {
		a = append(a, p.mysqlArgs()...)
	} else {
		a = append(a, p.mariadbArgs()...)
	}
	for _, o := range b.ServerOptions(p.Options) {
		a = append(a, "--"+o)
	}
	return a
}

// flushLogAtTrxCommit is the innodb_flush_log_at_trx_commit of the profile:
// 2 writes the log to the operating system at every commit (without fsync,
// like everything here), 0 about once a second.
func (p Profile) flushLogAtTrxCommit() string {
	if p.LazyCommit {
		return "0"
	}
	return "2"
}

// env is the server's malloc tuning (glibc), measured on an idle slot and
// after a soak's kind of queries (docs/benchmarks.md, "Where a slot's start
// goes"): one arena, and a fixed trim threshold, which also fixes the mmap
// threshold at 128 KiB. Left dynamic, glibc raises the mmap threshold after
// the first large free, so a connection's large buffers come from the heap
// and stay resident when it ends: about 4.5 MB per slot after three
// sessions, none with this.
//
// Debian's MySQL links tcmalloc instead (gperftools), which keeps freed
// spans mapped. TCMALLOC_AGGRESSIVE_DECOMMIT=true would return them (about
// 19 MiB less anonymous memory per idle MySQL slot, 9 MB less resident in
// a soak), but then every statement faults the memory it frees back in:
// SHOW GLOBAL STATUS cost the server twice the CPU, and a MySQL soak gave
// 45-49 fresh copies a second against 61-62 with it off (docs/benchmarks.md,
// "MySQL's allocator returning memory"). It stays off, pinned. glibc
// ignores it, as tcmalloc ignores glibc's.
func (p Profile) env() []string {
	return []string{
		"MALLOC_ARENA_MAX=1",
		"MALLOC_TRIM_THRESHOLD_=131072",
		"MALLOC_TOP_PAD_=65536",
		"TCMALLOC_AGGRESSIVE_DECOMMIT=false",
	}
}
