package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/pristinedb/pristine/api"
	"github.com/pristinedb/pristine/client"
	"github.com/pristinedb/pristine/internal/rootdir"
	"github.com/pristinedb/pristine/internal/server"
	"github.com/pristinedb/pristine/internal/state"
)

// ServeFlags are the flags of `pristine serve`.
type ServeFlags struct {
	Backend      string
	ExitWhenIdle bool
	Listen       string // loopback TCP address, e.g. 127.0.0.1:7878
	AllowRemote  bool
	MaxMemory    string
	MaxDisk      string
	MaxWaiters   int
	MaxConns     int // TCP connections to the API at once
	MaxConnsAddr int // of those, from one remote address
	ShrinkAfter  time.Duration
	MaxSpares    int
	Cache        server.Cache
	Net          NetFlags
}

// NetFlags make the daemon a pool node other machines use (docs/fleet.md).
type NetFlags struct {
	SlotAddress  string // address slot servers listen on
	Advertise    string // host leases and the API's certificate name
	SlotTLS      bool   // TLS on loopback slots too
	TLSCert      string // the API's certificate over TCP
	TLSKey       string
	TLSNames     []string // more names in the API's certificate
	InsecureHTTP bool     // plain HTTP on a non-loopback --listen, on purpose
	GroupTokens  string   // file of GROUP TOKEN lines
	MaxPerGroup  int      // leases one holder group may hold at once
	MaxSlots     int      // slots a group's requests may bring pools to
}

func newServeCmd(g *Globals) *cobra.Command {
	var f ServeFlags
	cmd := &cobra.Command{
		Use:   "serve [--listen 127.0.0.1:7878]",
		Short: "run the daemon that owns the pools of a root (pool up starts one when none runs)",
		Long: `serve owns the pools of a root and answers the HTTP/JSON API (docs: /v1/openapi.yaml)
on <root>/pristine.sock. With --listen it also serves loopback TCP, where every request
needs the bearer token kept in <root>/token, and the live dashboard at /: serve prints
a URL with a one-time login to open it. Prometheus metrics are at /metrics. For the
daemon that "pool up" started, "pristine dashboard" prints such a URL.

A pool node other machines use (docs/fleet.md): --slot-address puts the slots on an
address of this host and --advertise names the host leases tell clients; off loopback
every slot serves TLS with a certificate of the root's CA (<root>/tls/ca.pem, handed
out with every lease), lease accounts require TLS, and the API over a non-loopback
--listen serves HTTPS. --max-leases-per-group caps each runner group (--group-tokens).

A group token may use the operator's templates and build, pool, lease, finish, abort,
remove and bring down its own; it never sees another group's. Its pools keep the
default slot caps (1 GiB of disk, 256 MiB of memory per slot) and at most
--max-slots-per-group slots (default: twice --max-leases-per-group, or 64).

All pools together stay within --max-memory and --max-disk. By default these are
3/4 of the machine's memory (MemTotal in /proc/meminfo) and 3/4 of the size of the
filesystem that holds the root's data; "none" leaves only what the machine has free.`,
		Example: `  pristine serve --listen 127.0.0.1:7878      # then open the URL it prints
  pristine serve --max-memory 16G
  pristine serve --listen 10.0.0.5:7878 --allow-remote --slot-address 10.0.0.5 \
      --group-tokens /etc/pristine/group-tokens --max-leases-per-group 16`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return RunServe(cmd.Context(), g, f)
		},
	}
	cmd.Flags().BoolVar(&f.ExitWhenIdle, "exit-when-idle", false, "exit when the last pool goes down")
	cmd.Flags().StringVar(&f.Backend, "backend", "auto", "copy-on-write backend for new clones: auto, btrfs, reflink or copy")
	cmd.Flags().StringVar(&f.Listen, "listen", "", "also serve loopback TCP on this address (token required)")
	cmd.Flags().BoolVar(&f.AllowRemote, "allow-remote", false, "allow --listen on an address that is not loopback")
	cmd.Flags().StringVar(&f.MaxMemory, "max-memory", "", "memory all pools may take together, e.g. 16G (idle pools are shrunk to make room); default: 3/4 of the machine's memory (MemTotal); none: only what the machine has available")
	cmd.Flags().StringVar(&f.MaxDisk, "max-disk", "", "disk all pools may take together, e.g. 50G; default: 3/4 of the size of the filesystem holding the root's data; none: only what it has free")
	cmd.Flags().DurationVar(&f.ShrinkAfter, "shrink-after", server.DefaultShrinkAfter, "retire a slot a pool grew beyond its size (a client asked for more) once it has been ready and unused this long; 0: never")
	cmd.Flags().IntVar(&f.MaxSpares, "max-spares", server.DefaultMaxSpares, "let a pool grow by itself, one slot at a time, up to this many slots beyond its size while lease requests wait behind resets (within --max-memory/--max-disk; retired again after --shrink-after idle); 0: off")
	cmd.Flags().IntVar(&f.MaxWaiters, "max-waiters", 0, "lease requests in progress at once; one more is answered 429 with Retry-After (0: 1024, or a quarter of the open-file limit if lower)")
	cmd.Flags().IntVar(&f.MaxConns, "max-connections", 0, "TCP connections to the API (--listen) open at once; one more is closed at once (0: a quarter of the open-file limit, at most 16384); the unix socket is not counted")
	cmd.Flags().IntVar(&f.MaxConnsAddr, "max-connections-per-address", 0, "of those, from one remote address (0: a quarter of --max-connections); raise it when runners reach the API through one proxy")
	cmd.Flags().StringArrayVar(&f.Cache.Allow, "allow-cache", nil, "OCI repository (or prefix) template requests may name as their fleet cache, e.g. ghcr.io/acme/templates; http://HOST/REPO for a plain-HTTP registry on loopback (repeatable; also $"+server.EnvAllowCache+")")
	cmd.Flags().StringVar(&f.Cache.CAFile, "cache-ca-file", "", "PEM file of certificate authorities to trust for the cache registries")
	cmd.Flags().DurationVar(&f.Cache.Wait, "cache-wait", server.DefaultCacheWait, "longest wait for another machine's build of a cached template before building here")
	cmd.Flags().StringVar(&f.Net.SlotAddress, "slot-address", "", "address the slot servers listen on, e.g. the pod IP (default loopback); any other address serves TLS with a certificate of the root's CA (<root>/tls/ca.pem)")
	cmd.Flags().StringVar(&f.Net.Advertise, "advertise", "", "host name or address leases tell clients to connect to, named in the certificates (default: --slot-address)")
	cmd.Flags().BoolVar(&f.Net.SlotTLS, "slot-tls", false, "serve TLS on loopback slots too (always on for any other --slot-address)")
	cmd.Flags().StringVar(&f.Net.TLSCert, "tls-cert", "", "PEM certificate of the API over TCP (default for a non-loopback --listen: one the root's CA issues)")
	cmd.Flags().StringVar(&f.Net.TLSKey, "tls-key", "", "PEM key of --tls-cert")
	cmd.Flags().StringArrayVar(&f.Net.TLSNames, "tls-name", nil, "another host name clients reach the API by, put in the certificate the root's CA issues (repeatable), e.g. a Service's DNS name")
	cmd.Flags().BoolVar(&f.Net.InsecureHTTP, "insecure-http", false, "serve plain HTTP on a non-loopback --listen (the token crosses the network in clear)")
	cmd.Flags().StringVar(&f.Net.GroupTokens, "group-tokens", "", "file of GROUP TOKEN lines (0600): each token places its holders in its group, for --max-leases-per-group")
	cmd.Flags().IntVar(&f.Net.MaxPerGroup, "max-leases-per-group", 0, "leases one holder group may hold at once (0: no cap); the group is its token's (--group-tokens), else the Pristine-Group header, else \"default\"")
	cmd.Flags().IntVar(&f.Net.MaxSlots, "max-slots-per-group", 0, fmt.Sprintf("slots a group token's requests may bring a pool to, and the pools of its group's own templates to together (0: twice --max-leases-per-group, or %d when that is 0)", server.DefaultMaxSlotsPerGroup))
	return cmd
}

// RunServe runs the daemon until ctx ends or it is asked to stop.
func RunServe(ctx context.Context, g *Globals, f ServeFlags) error {
	st, err := g.openBuilder(ctx, f.Backend)
	if err != nil {
		return err
	}
	st.Progress = nil
	log := slog.New(slog.NewTextHandler(g.IO.Err, nil))
	st.Catalog().Log = log.With("component", "templates")
	root := st.Catalog().Root()
	ln, err := server.Listen(root)
	if err != nil {
		return err
	}
	defer ln.Close()
	network, err := server.SlotNetwork(root, f.Net.SlotAddress, f.Net.Advertise, f.Net.SlotTLS)
	if err != nil {
		return err
	}
	var tcp net.Listener
	var tlsConf *tls.Config
	scheme := "http"
	if f.Listen != "" {
		if tlsConf, err = server.APITLS(root, f.Listen, f.Net.TLSCert, f.Net.TLSKey, f.Net.Advertise, f.Net.TLSNames, f.Net.InsecureHTTP); err != nil {
			return err
		}
		if tcp, err = server.ListenTCP(f.Listen, f.AllowRemote); err != nil {
			return err
		}
		defer tcp.Close()
		if tlsConf != nil {
			scheme = "https"
		}
	}
	srv, err := server.New(ctx, root, st, log)
	if err != nil {
		return err
	}
	srv.Network = network
	srv.TLS = tlsConf
	srv.MaxConns, srv.MaxConnsPerAddress = f.MaxConns, f.MaxConnsAddr
	srv.MaxLeasesPerGroup = f.Net.MaxPerGroup
	srv.MaxSlotsPerGroup = f.Net.MaxSlots
	if f.Net.GroupTokens != "" {
		if srv.GroupTokens, err = server.LoadGroupTokens(f.Net.GroupTokens); err != nil {
			return err
		}
	}
	srv.ExitWhenIdle = f.ExitWhenIdle
	srv.MaxWaiters = f.MaxWaiters
	srv.ShrinkAfter = f.ShrinkAfter
	srv.MaxSpares = f.MaxSpares
	srv.Cache = f.Cache
	srv.Cache.AllowFromEnv()
	if srv.Budget, err = serveBudget(f, root.Data()); err != nil {
		return err
	}
	log.Info("budget of all pools", "max_memory_mib", srv.Budget.Memory>>20, "max_disk_mib", srv.Budget.Disk>>20)
	if tcp != nil {
		if srv.Token, err = server.LoadToken(root); err != nil {
			return err
		}
		// Clients' tests read the address from this line's start: keep it.
		fmt.Fprintf(g.IO.Err, "pristine: serving %s://%s/?login=%s (the dashboard, with a one-time login valid %s; API clients send the token in %s)\n",
			scheme, tcp.Addr(), srv.NewLogin(), server.LoginTTL, server.TokenFile(root))
	}
	return srv.Serve(ctx, ln, tcp)
}

// serveBudget is the budget --max-memory and --max-disk give: a size,
// "none" (0: only the machine's limits), or by default
// server.DefaultBudget of the root's data directory.
func serveBudget(f ServeFlags, dataDir string) (server.Budget, error) {
	b := server.DefaultBudget(dataDir)
	for _, v := range []struct {
		flag string
		dst  *int64
	}{{f.MaxMemory, &b.Memory}, {f.MaxDisk, &b.Disk}} {
		switch v.flag {
		case "":
		case "none":
			*v.dst = 0
		default:
			n, err := parseBytes(v.flag)
			if err != nil {
				return b, err
			}
			*v.dst = n
		}
	}
	return b, nil
}

// daemon returns a client of the root's daemon, starting one in the
// background when start is true and none answers.
func (g *Globals) daemon(ctx context.Context, start bool) (*client.Client, *rootdir.Root, error) {
	root, err := g.openRoot()
	if err != nil {
		return nil, nil, err
	}
	c := client.New(api.SocketPath(root.Path))
	c.Notify = func(msg string) { g.stderrf("pristine: %s", msg) }
	err = c.Health(ctx)
	if err == nil || !errors.Is(err, client.ErrNoDaemon) {
		return c, root, err
	}
	// A daemon that was killed left its state behind: start one, and it
	// brings its pools and leases back.
	if !start && !state.HasPools(root.Path) {
		return c, root, err
	}
	if err := startDaemon(root, g); err != nil {
		return nil, nil, err
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if err = c.Health(ctx); err == nil {
			return c, root, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil, nil, fmt.Errorf("the daemon did not start within 30s: see %s/serve.log (%v)", root.Path, err)
}

// startDaemon is spawnDaemon; tests replace it so that no command they
// run starts a daemon process.
var startDaemon = spawnDaemon

// spawnDaemon starts `pristine serve --exit-when-idle` detached from this
// process, logging to serve.log under the root; the flags of g that shape
// builds (--no-timezones, --no-ram-build, --ram-dir, --ram-budget) are
// passed on.
func spawnDaemon(root *rootdir.Root, g *Globals) error {
	exe, err := PristineExe()
	if err != nil {
		return fmt.Errorf("start daemon: %w", err)
	}
	logf, err := os.OpenFile(root.Path+"/serve.log", os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("start daemon: %w", err)
	}
	defer logf.Close()
	args := []string{"serve", "--root", root.Path, "--exit-when-idle"}
	if g.NoTimezones {
		args = append(args, "--no-timezones")
	}
	if g.NoRAMBuild {
		args = append(args, "--no-ram-build")
	}
	if g.RAMDir != "" {
		args = append(args, "--ram-dir", g.RAMDir)
	}
	if g.RAMBudget != "" {
		args = append(args, "--ram-budget", g.RAMBudget)
	}
	cmd := exec.Command(exe, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start daemon: %w", err)
	}
	return cmd.Process.Release()
}
