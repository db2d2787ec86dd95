package mariadb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/pristinedb/pristine/internal/dsn"

	"github.com/pristinedb/pristine/internal/svcuser"
)

// Config says where an instance keeps its files and how it listens.
type Config struct {
	Datadir string // an initialised data directory
	RunDir  string // socket, pid file and error log go here (short path: sockets are limited to 107 bytes)
	Port    int    // TCP port; 0 picks a free one
	// BindAddress is the address the server listens on; empty means
	// 127.0.0.1 (loopback only).
	BindAddress string
	// TLS, when set, makes the server present a certificate and refuse
	// TCP connections without TLS (require_secure_transport; the unix
	// socket is unaffected).
	TLS     *TLS
	Profile Profile
	// Extra are additional server options, e.g. "--skip-grant-tables".
	Extra []string
	// AdminPassword is root@localhost's password (the root's admin secret,
	// see rootdir.AdminSecret); empty for a data directory not yet secured.
	AdminPassword string
	// Account is who the server runs as: a server id claimed for this
	// data directory (svcuser.Claim), so that it owns nothing but its own
	// data and run directories. Nil means the shared servers' account
	// (svcuser.Get).
	Account *svcuser.Account
	// Cgroup, when set, is a cgroup v2 group the server runs in from its
	// first instruction (clone3 into the group), so nothing it forks can
	// start outside it. A kernel that cannot start a process in a group
	// gets the server moved there right after it starts.
	Cgroup string
}

// FilesDir is the server's secure_file_priv: an empty directory of its own,
// the only place LOAD DATA INFILE, SELECT ... INTO OUTFILE/DUMPFILE and
// LOAD_FILE() may touch.
func (c Config) FilesDir() string { return filepath.Join(c.RunDir, "files") }

// Socket is the instance's unix socket path.
func (c Config) Socket() string { return filepath.Join(c.RunDir, "mysqld.sock") }

// ErrorLog is the path of the instance's error log.
func (c Config) ErrorLog() string { return filepath.Join(c.RunDir, "error.log") }

// PIDFile is the path of the instance's pid file.
func (c Config) PIDFile() string { return filepath.Join(c.RunDir, "mysqld.pid") }

// Instance is a running server process started by pristine.
type Instance struct {
	Binary *Binary
	Config Config
	cmd    *exec.Cmd
	done   chan struct{} // closed when the process has been reaped
	err    error         // the process's exit status, valid after done
	once   sync.Once
}

// ErrExited is wrapped by errors that report a server which stopped on its own.
var ErrExited = errors.New("server exited")

// maxSocketPath is the longest unix socket path Linux accepts.
const maxSocketPath = 107

// Start launches a server on cfg and returns at once; call WaitReady. The
// process dies with pristine (parent-death signal) and is reaped by pristine.
func Start(b *Binary, cfg Config) (*Instance, error) {
	if n := len(cfg.Socket()); n > maxSocketPath {
		return nil, fmt.Errorf("socket path %s is %d bytes, over the %d Linux allows: use a shorter --root", cfg.Socket(), n, maxSocketPath)
	}
	acct, err := cfg.account()
	if err != nil {
		return nil, err
	}
	if err := prepareDirs(acct, cfg); err != nil {
		return nil, err
	}
	if cfg.BindAddress == "" {
		cfg.BindAddress = "127.0.0.1"
	}
	if cfg.Port == 0 {
		p, err := freePort(cfg.BindAddress)
		if err != nil {
			return nil, err
		}
		cfg.Port = p
	}
	args := []string{"--no-defaults",
		"--datadir=" + cfg.Datadir,
		"--socket=" + cfg.Socket(),
		"--pid-file=" + cfg.PIDFile(),
		"--log-error=" + cfg.ErrorLog(),
		"--bind-address=" + cfg.BindAddress,
		"--port=" + strconv.Itoa(cfg.Port),
		"--secure-file-priv=" + cfg.FilesDir(),
		// No DATA/INDEX DIRECTORY outside the data directory.
		"--loose-skip-symbolic-links",
	}
	if !hasOption(cfg.Extra, "--tmpdir=") {
		// A caller's own tmpdir (a slot's, in its clone) replaces this one.
		args = append(args, "--tmpdir="+cfg.RunDir)
	}
	if cfg.TLS != nil {
		tlsArgs, err := cfg.TLS.install(acct, cfg.RunDir)
		if err != nil {
			return nil, err
		}
		args = append(args, tlsArgs...)
	} else {
		own, err := b.ownCertificate(acct, cfg.RunDir)
		if err != nil {
			return nil, err
		}
		args = append(args, own...)
	}
	args = append(args, cfg.Profile.args(b)...)
	args = append(args, cfg.Extra...)
	cmd, err := startIn(cfg.Cgroup, func() *exec.Cmd {
		cmd := exec.Command(b.Path, args...)
		cmd.Env = serverEnv(cfg.Profile.env())
		cmd.SysProcAttr = childAttr()
		cmd.SysProcAttr.Credential = acct.Credential()
		cmd.Dir = cfg.RunDir
		return cmd
	})
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", b.Path, err)
	}
	in := &Instance{Binary: b, Config: cfg, cmd: cmd, done: make(chan struct{})}
	go func() {
		in.err = cmd.Wait()
		close(in.done)
	}()
	return in, nil
}

// startIn starts the command newCmd makes in cgroup v2 group dir (none
// when dir is empty): born in it where the kernel can (clone3 with
// CLONE_INTO_CGROUP, Linux 5.7), else started and moved there before it
// runs anything of the caller's.
func startIn(dir string, newCmd func() *exec.Cmd) (*exec.Cmd, error) {
	cmd := newCmd()
	if dir == "" {
		return cmd, startNoSync(cmd)
	}
	g, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("open the server's cgroup: %w", err)
	}
	cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, int(g.Fd())
	err = startNoSync(cmd)
	g.Close()
	if err == nil {
		return cmd, nil
	}
	// No clone3 into a group here (an older kernel, a seccomp filter):
	// start it, then move it.
	cmd = newCmd()
	if err := startNoSync(cmd); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("move the server into its cgroup %s: %w", dir, err)
	}
	return cmd, nil
}

// PID is the server's process id.
func (in *Instance) PID() int { return in.cmd.Process.Pid }

// Signal sends sig to the server process; once it has exited and been
// reaped it fails (os.ErrProcessDone) rather than reach a process that
// took its pid.
func (in *Instance) Signal(sig os.Signal) error { return in.cmd.Process.Signal(sig) }

// Done is closed when the server process has exited and been reaped.
func (in *Instance) Done() <-chan struct{} { return in.done }

// Err waits until the server has exited and returns its exit status (nil
// for exit code 0; an *exec.ExitError otherwise, which tells a signal).
func (in *Instance) Err() error {
	<-in.done
	return in.err
}

// Running reports whether the process is still alive.
func (in *Instance) Running() bool {
	select {
	case <-in.done:
		return false
	default:
		return true
	}
}

// WaitReady waits until the server accepts connections on its socket and
// answers a query. It polls by connecting to the socket (no client process
// per poll) and fails at once, with the end of the error log, if the server
// exits.
func (in *Instance) WaitReady(ctx context.Context) error {
	sock := in.Config.Socket()
	delay := time.Millisecond
	for {
		if c, err := net.Dial("unix", sock); err == nil {
			c.Close()
			break
		}
		select {
		case <-in.done:
			return in.exitError()
		case <-ctx.Done():
			return fmt.Errorf("wait for server on %s: %w (error log: %s)", sock, ctx.Err(), in.LogTail(3))
		case <-time.After(delay):
		}
		if delay < 8*time.Millisecond {
			delay *= 2
		}
	}
	db, err := in.Open("")
	if err != nil {
		return err
	}
	defer db.Close()
	var one int
	if err := db.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
		// A server that refuses an option may have opened its socket
		// before it reads the option and exits (MySQL does): its error log
		// says why, the broken connection does not.
		select {
		case <-in.done:
			return in.exitError()
		case <-time.After(3 * time.Second):
		}
		return fmt.Errorf("first query on %s: %w", sock, err)
	}
	return nil
}

func (in *Instance) exitError() error {
	tail := in.LogTail(4)
	// MySQL logs the bind error and then several more lines as it aborts.
	if long := in.LogTail(20); strings.Contains(long, "Address already in use") || strings.Contains(long, "Can't start server: Bind on TCP/IP port") {
		return fmt.Errorf("%w: port %d is in use by another program: %s", ErrPortInUse, in.Config.Port, tail)
	}
	return fmt.Errorf("%w (%v): %s", ErrExited, in.err, tail)
}

// StartReady starts a server on cfg and waits until it answers. A port of
// the kernel's choosing (cfg.Port 0) can be taken by another program
// between the choice and the server's bind: then the server is started
// again on a new port, up to three times in all. The caller kills or stops
// the returned instance.
func StartReady(ctx context.Context, b *Binary, cfg Config) (*Instance, error) {
	for attempt := 1; ; attempt++ {
		in, err := Start(b, cfg)
		if err != nil {
			return nil, err
		}
		if err = in.WaitReady(ctx); err == nil {
			return in, nil
		}
		in.Kill()
		if cfg.Port != 0 || attempt == 3 || !errors.Is(err, ErrPortInUse) {
			return nil, err
		}
	}
}

// ErrPortInUse means the server could not bind its TCP port; callers retry
// with another port.
var ErrPortInUse = errors.New("port in use")

// LogTail returns the last n lines of the error log, for messages (read
// from its last logTailBytes).
func (in *Instance) LogTail(n int) string {
	b, err := readTail(in.Config.ErrorLog(), logTailBytes)
	if err != nil {
		return "no error log: " + err.Error()
	}
	return lastLines(b, n)
}

// DSN is a go-sql-driver/mysql DSN for root on the instance's unix socket,
// with the admin password of its Config; an empty database means none.
func (in *Instance) DSN(database string) string {
	return dsn.Socket(in.Config.Socket(), "root", in.Config.AdminPassword, database)
}

// WarmLogin logs in as user once over the instance's unix socket (where
// the password goes in the clear, with no key exchange) and leaves, on a
// server that caches logins (Flavor.CachesLogins); elsewhere it does
// nothing. The account's next login, over TCP too, is then checked
// against the server's cache: no RSA exchange, no TLS needed.
func (in *Instance) WarmLogin(ctx context.Context, user, password string) error {
	if !in.Binary.Flavor.CachesLogins() {
		return nil
	}
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd, cfg.Net, cfg.Addr = user, password, "unix", in.Config.Socket()
	c, err := mysql.NewConnector(cfg)
	if err != nil {
		return fmt.Errorf("log in as %s: %w", user, err)
	}
	conn, err := c.Connect(ctx)
	if err != nil {
		return fmt.Errorf("log in as %s: %w", user, err)
	}
	return conn.Close()
}

// Open returns a connection pool for root on the instance's unix socket.
func (in *Instance) Open(database string) (*sql.DB, error) {
	return sql.Open("mysql", in.DSN(database))
}

// Stop shuts the server down cleanly (SIGTERM, then SIGKILL after timeout)
// and reaps it. A clean stop leaves a data directory that can be cloned.
func (in *Instance) Stop(ctx context.Context, timeout time.Duration) error {
	if !in.Running() {
		return nil
	}
	_ = in.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-in.done:
		if in.cleanExit() {
			return nil
		}
		return fmt.Errorf("server shutdown: %w: %s", in.err, in.LogTail(3))
	case <-time.After(timeout):
	case <-ctx.Done():
	}
	threads := liveThreads(in.PID())
	in.Kill()
	return fmt.Errorf("server on %s did not shut down within %s and was killed (threads still running: %s): %s", in.Config.Socket(), timeout, threads, in.LogTail(3))
}

// liveThreads names the threads of process pid by name and what each waits
// in (/proc/PID/task/*/comm and wchan), counted: "connection x2 (futex_wait_queue)".
// It says what a shutdown that does not end is waiting for.
func liveThreads(pid int) string {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return "unknown: " + err.Error()
	}
	count := map[string]int{}
	var order []string
	for _, t := range tasks {
		dir := fmt.Sprintf("/proc/%d/task/%s/", pid, t.Name())
		comm, _ := os.ReadFile(dir + "comm")
		wchan, _ := os.ReadFile(dir + "wchan")
		key := strings.TrimSpace(string(comm))
		if w := strings.TrimSpace(string(wchan)); w != "" && w != "0" {
			key += " (" + w + ")"
		}
		if count[key] == 0 {
			order = append(order, key)
		}
		count[key]++
	}
	parts := make([]string, len(order))
	for i, k := range order {
		parts[i] = k
		if n := count[k]; n > 1 {
			parts[i] = fmt.Sprintf("%s x%d", k, n)
		}
	}
	return strings.Join(parts, ", ")
}

func (in *Instance) cleanExit() bool {
	return in.err == nil
}

// Kill stops the server at once (SIGKILL) and reaps it. Use it when the data
// directory is thrown away anyway.
func (in *Instance) Kill() {
	in.once.Do(func() {
		if in.Running() {
			_ = in.cmd.Process.Kill()
		}
	})
	<-in.done
}

// hasOption tells whether args hold an option starting with prefix
// (e.g. "--tmpdir=").
func hasOption(args []string, prefix string) bool {
	for _, a := range args {
		if strings.HasPrefix(a, prefix) {
			return true
		}
	}
	return false
}

// account is who the server runs as.
func (c Config) account() (svcuser.Account, error) {
	if c.Account != nil {
		return *c.Account, nil
	}
	return svcuser.Get()
}

// freePort picks the port of a server started with Config.Port 0 (a test
// replaces it to hand out a taken port).
var freePort = FreePortOn

// FreePort asks the kernel for a free loopback TCP port.
func FreePort() (int, error) { return FreePortOn("127.0.0.1") }

// FreePortOn asks the kernel for a free TCP port on address addr.
func FreePortOn(addr string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(addr, "0"))
	if err != nil {
		return 0, fmt.Errorf("find a free TCP port on %s: %w", addr, err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// childAttr makes a child die with pristine (SIGKILL on parent death) and
// puts it in its own process group so a terminal's Ctrl-C reaches only
// pristine, which then stops its children in order.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}

// prepareDirs makes the run directory (0750 with group pristine, or 0700)
// and an empty secure_file_priv directory, both the server account's, and
// checks that the account owns the data directory and can reach both.
func prepareDirs(acct svcuser.Account, cfg Config) error {
	if err := os.MkdirAll(filepath.Dir(cfg.RunDir), 0o711); err != nil {
		return fmt.Errorf("create run directory: %w", err)
	}
	if err := os.Mkdir(cfg.RunDir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("create run directory: %w", err)
	}
	if err := acct.OwnRun(cfg.RunDir); err != nil {
		return err
	}
	_ = os.Remove(cfg.Socket())
	if err := os.RemoveAll(cfg.FilesDir()); err != nil {
		return fmt.Errorf("empty %s: %w", cfg.FilesDir(), err)
	}
	if err := os.Mkdir(cfg.FilesDir(), 0o700); err != nil {
		return fmt.Errorf("create %s: %w", cfg.FilesDir(), err)
	}
	if err := acct.Own(cfg.FilesDir(), 0o700); err != nil {
		return err
	}
	var st syscall.Stat_t
	if err := syscall.Stat(cfg.Datadir, &st); err == nil && acct.Drop && int(st.Uid) != acct.UID {
		return fmt.Errorf("data directory %s belongs to uid %d, not to %s (uid %d) that its server runs as: it was made by an older pristine, by hand, or is a sealed template: remove it (pristine template rm / pool down) and build it again", cfg.Datadir, st.Uid, acct.Name, acct.UID)
	}
	if err := acct.CheckReachable(cfg.Datadir); err != nil {
		return err
	}
	return acct.CheckReachable(cfg.RunDir)
}

// defaultPath is a server's PATH when pristine has none.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// passedEnv are the variables of pristine's environment a server gets:
// the time zone (the server's system time zone) and the dynamic loader's
// settings (a server installed outside the library path, `eatmydata
// pristine ...`). PATH is always set.
var passedEnv = []string{"TZ", "LD_PRELOAD", "LD_LIBRARY_PATH"}

// serverEnv is the whole environment of a server or of the program that
// initialises its data directory: PATH, passedEnv where pristine has them,
// then extra. Nothing else of pristine's environment, which may hold a
// registry's credentials or a capture source's password, reaches a
// server: it runs as another account, with code a template or a lease
// may steer.
func serverEnv(extra []string) []string {
	path := os.Getenv("PATH")
	if path == "" {
		path = defaultPath
	}
	env := []string{"PATH=" + path}
	for _, k := range passedEnv {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return append(env, extra...)
}
