package api

import (
	"encoding/json"
	"time"
)

// Template build statuses of TemplateAnswer.Status.
const (
	StatusReady    = "ready"    // the template exists
	StatusBuild    = "build"    // the caller builds it: the connection fields are set
	StatusBuilding = "building" // someone else is building it
	StatusFailed   = "failed"   // the build failed or was aborted
	StatusRemoved  = "removed"  // DELETE /v1/templates/{ref} removed it
)

// TemplateRequest asks to build a template (POST /v1/templates).
type TemplateRequest struct {
	Name       string  `json:"name"`
	Key        string  `json:"key"` // the client's content hash of its migrations and fixtures
	Database   string  `json:"database,omitempty"`
	DBsPerSlot int     `json:"dbs_per_slot,omitempty"`
	TTL        float64 `json:"ttl_seconds,omitempty"` // the build is aborted after this long; 0: 30 minutes
	// Cache is an OCI repository a fleet of machines shares (e.g.
	// ghcr.io/acme/templates): the daemon pulls the template from it when
	// another machine pushed it, or lets the caller build and pushes the
	// result. The daemon must allow the repository (serve --allow-cache).
	Cache string `json:"cache,omitempty"`
	// RunsCode says the caller's build runs code (a migrate command or
	// function, an init command, framework migrations) whose output
	// depends on files Key must then cover.
	RunsCode bool `json:"runs_code,omitempty"`
	// KeyFiles is how many file paths (files, directories, globs) Key
	// hashes. A request that runs code with none is refused with
	// CodeUnkeyedBuild unless AllowStale is set: its key would be only
	// the command's text, and a changed migration would silently get the
	// old template.
	KeyFiles int `json:"key_files,omitempty"`
	// AllowStale accepts a build that runs code with no file keying it:
	// the template is then rebuilt only when the key's strings change,
	// never when a file the code reads does (a stale template).
	AllowStale bool `json:"allow_stale,omitempty"`
}

// CodeUnkeyedBuild is ErrorBody.Code of a template request (or a `template
// build`) whose build runs code but names no file that keys it
// (TemplateRequest.KeyFiles), without AllowStale: each client answers it
// with its own option names.
const CodeUnkeyedBuild = "unkeyed_build"

// Unkeyed reports whether req would build a template that no file keys
// although its build runs code, and did not opt out.
func (req TemplateRequest) Unkeyed() bool {
	return req.RunsCode && req.KeyFiles <= 0 && !req.AllowStale
}

// TemplateAnswer answers POST /v1/templates and GET /v1/templates/{ref}.
// Password (and DSN, URL and Env, which carry it) is set only in the
// "build" answer, to the builder.
type TemplateAnswer struct {
	// Status is "ready" (Template is set), "build" (the caller builds: the
	// connection fields are set), "building" (someone else is) or "failed".
	Status   string    `json:"status"`
	Hash     string    `json:"hash,omitempty"`
	Template *Template `json:"template,omitempty"`
	Error    string    `json:"error,omitempty"`
	Host     string    `json:"host,omitempty"`
	Port     int       `json:"port,omitempty"`
	Socket   string    `json:"socket,omitempty"`
	User     string    `json:"user,omitempty"`
	Password Secret    `json:"password,omitzero"`
	Database string    `json:"database,omitempty"`
	DSN      string    `json:"dsn,omitempty"`
	URL      string    `json:"url,omitempty"`
	Env      []string  `json:"env,omitempty"`
}

// Template describes a built template (GET /v1/templates). Password is
// never revealed over the API: the build locks that account anyway.
type Template struct {
	Name     string    `json:"name"`
	Hash     string    `json:"hash"`
	Key      string    `json:"key,omitempty"` // the client's content key, if a client built it
	Created  time.Time `json:"created"`
	LastUsed time.Time `json:"last_used"`
	// Server is the version of the server that built it.
	Server  string `json:"server"`
	Flavor  string `json:"flavor"`
	Backend string `json:"backend"`
	// LogFileSize is innodb_log_file_size of the data directory.
	LogFileSize int64 `json:"log_file_size"`
	// ServerOptions are the options (KEY=VALUE) the template was built with.
	ServerOptions []string `json:"server_options,omitempty"`
	// Databases are the schemas a lease hands out.
	Databases []string `json:"databases"`
	// User and Password name the account the build ran as.
	User     string `json:"user"`
	Password Secret `json:"password"`
	// Accounts is the version of the account lockdown the template has.
	Accounts string `json:"accounts,omitempty"`
	Bytes    int64  `json:"bytes"`
	// Logical and Physical are what the data directory holds and takes
	// on disk, measured from its extents (compressed where the
	// filesystem compresses); filled in by template ls.
	Logical      int64    `json:"logical_bytes,omitempty"`
	Physical     int64    `json:"physical_bytes,omitempty"`
	BuildSeconds float64  `json:"build_seconds"`
	Inputs       []string `json:"inputs,omitempty"`
	// Warnings are what the build found that clones will not carry.
	Warnings []string `json:"warnings,omitempty"`
	InitCmd  string   `json:"init_cmd,omitempty"`
	// Parent is the hash of the template a fork was made from, ParentName
	// its name (POST /v1/leases/{id}/fork); empty for other templates.
	Parent     string `json:"parent,omitempty"`
	ParentName string `json:"parent_name,omitempty"`
}

// ForkRequest asks for a template made from a lease's current state
// (POST /v1/leases/{id}/fork). The lease and its connections go on.
type ForkRequest struct {
	// Name is the new template's name.
	Name string `json:"name"`
	// Key, when set, files the fork under its parent's key and this one:
	// a later fork of the same template with the same key (e.g. a hash
	// of the fixture files) returns the template made before at once.
	Key string `json:"key,omitempty"`
}

// ForkAnswer answers POST /v1/leases/{id}/fork.
type ForkAnswer struct {
	Template *Template `json:"template"`
	// Built is false when a fork with the request's key was here already.
	Built bool `json:"built"`
	// Seconds is how long the fork took in the daemon.
	Seconds float64 `json:"seconds"`
	// Phases is where those seconds went, step by step (a new fork only).
	Phases []Phase `json:"phases,omitempty"`
}

// Phase is one step of a fork or build and the seconds it took.
type Phase struct {
	Name    string  `json:"name"`
	Seconds float64 `json:"seconds"`
}

// MarshalJSON encodes the answer, with DSN, URL and Env left empty unless
// Password was revealed: they carry the password too.
func (a TemplateAnswer) MarshalJSON() ([]byte, error) {
	type plain TemplateAnswer // without this method
	if !a.Password.Revealed() {
		a.DSN, a.URL, a.Env = "", "", nil
	}
	return json.Marshal(plain(a))
}
