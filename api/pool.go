package api

import "time"

// PoolRequest asks to bring a pool up (POST /v1/pools). For a template
// whose pool is up already with fewer slots than Size, it grows the pool
// to Size instead: the answer comes at once (the new slots start in the
// background, Grown says how many), or an error when they do not fit the
// daemon's --max-memory/--max-disk or the machine.
type PoolRequest struct {
	Template   string `json:"template"`
	Size       int    `json:"size"`
	BufferPool int64  `json:"buffer_pool,omitempty"` // bytes; 0 = default profile
	Parallel   int    `json:"parallel,omitempty"`
	// SlotDisk caps what each slot may write, in bytes (at most 1 PiB): 0 is
	// the daemon's default, -1 no cap; other negative values are refused.
	SlotDisk int64 `json:"slot_disk,omitempty"`
	// SlotMemory is the most memory one MEMORY table, one temporary
	// table and one session of a slot may take, in bytes (ceilings a
	// lease cannot raise): 0 is the daemon's default, a negative value
	// the server's own limits, which a lease can raise.
	SlotMemory int64 `json:"slot_memory,omitempty"`
	// MinReady is how many slots must answer before the answer's last
	// line (the pool's status) comes; the others go on starting in the
	// daemon, each handed to waiting lease requests as soon as it
	// answers. 0 or absent: the first round of starts, min(Size,
	// Parallel); Size or more: every slot.
	MinReady int `json:"min_ready,omitempty"`
}

// PoolEvent is one line of the NDJSON stream POST /v1/pools answers with:
// progress lines, then one with Status or Error.
type PoolEvent struct {
	Ready  int         `json:"ready,omitempty"`
	Total  int         `json:"total,omitempty"`
	Status *PoolStatus `json:"status,omitempty"`
	Error  string      `json:"error,omitempty"`
	Code   int         `json:"code,omitempty"` // the HTTP status the error maps to
	// Grown is how many slots a request for a larger pool of a template
	// already up added (they start in the background).
	Grown int `json:"grown,omitempty"`
}

// PoolStats are a pool's counters.
type PoolStats struct {
	UpSeconds     float64 `json:"up_seconds"`
	Leases        int64   `json:"leases"`
	Expired       int64   `json:"expired"`
	HolderGone    int64   `json:"holder_gone"`
	Reused        int64   `json:"reused_unchanged"`
	JournalErrors int64   `json:"journal_errors,omitempty"`
	Replaced      int64   `json:"replaced"`
	ResetFailures int64   `json:"reset_failures"`
	// OverCap counts slots that wrote past their disk cap and were made
	// read-only until released.
	OverCap int64 `json:"over_cap,omitempty"`
	// CapKills counts the times a slot over its disk cap still grew
	// (temporary tables) and its connections were killed.
	CapKills int64 `json:"cap_kills,omitempty"`
	// Grown counts the slots the pool grew by (a lease's min_size, or a
	// request for a larger pool); ShrunkIdle the grown slots retired after
	// the daemon's --shrink-after idle.
	Grown      int64 `json:"grown,omitempty"`
	ShrunkIdle int64 `json:"shrunk_idle,omitempty"`
	// GrownForWaits counts the slots of Grown the pool grew by itself
	// because lease requests waited behind resets (serve --max-spares).
	GrownForWaits int64 `json:"grown_for_waits,omitempty"`
	// IllegalMoves counts slot moves the pool's state machine refused, and
	// resets queued against the reset queue's rule: bugs in pristine, 0 in
	// a healthy daemon.
	IllegalMoves int64 `json:"illegal_moves,omitempty"`
	// SlotDeaths counts slots whose server died, by reason.
	SlotDeaths map[string]int64 `json:"slot_deaths,omitempty"`
	// LeasesLost counts leases that ended without their holder releasing
	// them, by reason.
	LeasesLost map[string]int64 `json:"leases_lost,omitempty"`
	// ResetPaths counts resets by the path they took: "inplace" (the
	// server kept, only the changed tables restored), "full" or
	// "full:<reason>" (why the in-place reset could not be used).
	ResetPaths map[string]int64 `json:"reset_paths,omitempty"`
	// TablesRestored counts the tables in-place resets restored.
	TablesRestored int64 `json:"tables_restored,omitempty"`
}

// SlotStatus is one slot of a pool.
type SlotStatus struct {
	Slot   int       `json:"slot"`
	State  string    `json:"state"` // starting, ready, leased, resetting, kept, failed, retired
	Port   int       `json:"port"`
	PID    int       `json:"pid,omitempty"`
	Leases int       `json:"leases"`
	Since  time.Time `json:"since"`
	Error  string    `json:"error,omitempty"`
}

// PoolStatus is a snapshot of a pool.
type PoolStatus struct {
	Template string `json:"template"`
	Hash     string `json:"hash"`
	// Size counts the live slots (starting ones included, retired ones
	// not); Base is the size the pool was brought up with, which idle
	// shrinking keeps.
	Size       int            `json:"size"`
	Base       int            `json:"base_size"`
	DBsPerSlot int            `json:"dbs_per_slot"`
	Backend    string         `json:"backend"`
	States     map[string]int `json:"states"` // slots by state
	Leased     int            `json:"leased"`
	Stats      PoolStats      `json:"stats"`
	WaitP50MS  float64        `json:"lease_wait_p50_ms"`
	WaitP99MS  float64        `json:"lease_wait_p99_ms"`
	ResetP50MS float64        `json:"reset_p50_ms"`
	ResetP99MS float64        `json:"reset_p99_ms"`
	ResetMaxMS float64        `json:"reset_max_ms"`
	Slots      []SlotStatus   `json:"slots,omitempty"`
	// DiskCap says how much each slot may write and how that is enforced,
	// or why it is not ("off: ...").
	DiskCap string `json:"disk_cap,omitempty"`
	// MemoryCap says how each slot's memory is bounded and, where a slot
	// server has no memory cgroup, why.
	MemoryCap string `json:"memory_cap,omitempty"`
	// Processes says how a slot's processes are held and killed with it
	// (a cgroup per slot) or why they are not.
	Processes string `json:"processes,omitempty"`
	// Disk is what the template and the pool's clones hold and take on
	// disk, measured from the filesystem's extents: in one pool's status
	// asked for with ?disk=true only (a walk of every slot's files).
	Disk *DiskUse `json:"disk,omitempty"`
}

// DiskUse is logical (the bytes the files hold, uncompressed) and
// physical (the bytes they take on the filesystem, compressed where it
// compresses, each shared extent once) sizes, from the filesystem's
// extent records. The slots' physical bytes are those their clones add to
// the template's: what the slots wrote, as snapshots share the rest.
type DiskUse struct {
	TemplateLogical  int64  `json:"template_logical"`
	TemplatePhysical int64  `json:"template_physical"`
	SlotsLogical     int64  `json:"slots_logical"`
	SlotsPhysical    int64  `json:"slots_physical"`
	Method           string `json:"method,omitempty"` // "btrfs extents" or "fiemap"
	Error            string `json:"error,omitempty"`  // why it could not be measured
}
