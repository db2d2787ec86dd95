package e2e

import (
	"bytes"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/pristinedb/pristine/internal/mariadb/mariadbtest"
	"github.com/pristinedb/pristine/internal/xbstream"
)

// TestUnpackRefusesCutXbstream: `pristine unpack --format xbstream` fails on
// a stream that is cut short, naming what is missing, and leaves no target.
func TestUnpackRefusesCutXbstream(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, f func(w *xbstream.Writer)) string {
		var b bytes.Buffer
		f(xbstream.NewWriter(&b))
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	open := write("open.xbs", func(w *xbstream.Writer) {
		w.WriteFile("ibdata1", []byte("whole"))
		w.Payload("db/t.ibd", 0, []byte("no end chunk follows"))
	})
	noEnd := write("noend.xbs", func(w *xbstream.Writer) {
		w.WriteFile("ibdata1", []byte("whole"))
		w.WriteFile("db/t.ibd", []byte("whole too"))
	})
	whole := write("whole.xbs", func(w *xbstream.Writer) {
		w.WriteFile("ibdata1", []byte("whole"))
		w.WriteFile("xtrabackup_checkpoints", []byte("backup_type = full-backuped\n"))
		w.WriteFile("xtrabackup_info", []byte("tool_name = mariabackup\n"))
	})
	tests := []struct {
		name, stream string
		args         []string
		want         string // in stderr; empty: success
	}{
		{"file left open", open, nil, "1 of 2 files have no end-of-file chunk (db/t.ibd)"},
		{"file left open, any stream", open, []string{"--any-xbstream"}, "db/t.ibd"},
		{"backup never finished", noEnd, nil, "--any-xbstream"},
		{"not a backup, said so", noEnd, []string{"--any-xbstream"}, ""},
		{"whole backup", whole, nil, ""},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, "out-"+string(rune('a'+i)))
			args := append([]string{"unpack", "--format", "xbstream"}, tc.args...)
			_, errOut, err := runBin(nil, append(args, tc.stream, out)...)
			_, serr := os.Stat(out)
			if tc.want == "" {
				if err != nil || serr != nil {
					t.Fatalf("unpack failed: %v %s", err, errOut)
				}
				return
			}
			if err == nil || !strings.Contains(errOut, tc.want) {
				t.Fatalf("want a failure saying %q, got %v: %s", tc.want, err, errOut)
			}
			if serr == nil {
				t.Fatal("the target exists after a failed unpack")
			}
		})
	}
}

// runBin runs pristine with args and extra environment, without a root.
func runBin(env []string, args ...string) (string, string, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), err
}

// TestBadMetaOnDisk: a template directory with a meta.json pristine could
// not have written (hash "x") makes no command panic: ls warns naming it,
// pool up and rm of the good template work. On the way, a lease with a TTL
// out of range is refused with the range.
func TestBadMetaOnDisk(t *testing.T) {
	e := newEnv(t)
	in := filepath.Join(t.TempDir(), "s.sql")
	os.WriteFile(in, []byte(schema), 0o644)
	e.must("template", "build", "app", "--from-sql", in)
	bad := filepath.Join(e.root, "data", "templates", "x")
	os.MkdirAll(filepath.Join(bad, "data"), 0o755)
	meta := `{"name":"evil","hash":"x","server":"any","databases":["app"],"user":"pristine","password":"p"}`
	if err := os.WriteFile(filepath.Join(bad, "meta.json"), []byte(meta), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := e.run("template", "ls")
	if err != nil || !strings.Contains(out, "app") || strings.Contains(out, "evil") || !strings.Contains(errOut, bad) {
		t.Fatalf("template ls: %v\nstdout: %s\nstderr: %s", err, out, errOut)
	}
	if _, errOut, err := e.run("template", "rm", "evil"); err == nil || strings.Contains(errOut, "panic") {
		t.Fatalf("template rm evil: %v %s", err, errOut)
	}
	e.must("pool", "up", "--template", "app", "--size", "1")
	// The CLI shows the daemon's 400 with the allowed range.
	if _, errOut, err := e.run("lease", "--ttl", "200h"); err == nil || !strings.Contains(errOut, "ttl_seconds is 720000: it must be from 0 to 604800 seconds (7 days)") {
		t.Fatalf("lease --ttl 200h: %v %s", err, errOut)
	}
	e.lease()
	e.must("pool", "down")
	e.must("template", "rm", "app")
	if _, err := os.Stat(bad); err != nil {
		t.Fatalf("the bad directory was touched: %v", err)
	}
}

// holdProxy forwards 127.0.0.1:PORT to a server's TCP address (not its
// socket: MySQL takes a socket connection as secure and, for
// caching_sha2_password, waits for the password in clear where a TCP
// client asks for its RSA key). Once armed, it holds
// the next connection and hands the test a gate; the connection goes on when
// the test closes the gate.
type holdProxy struct {
	addr  string
	mu    sync.Mutex
	armed bool
	held  chan chan struct{}
}

func newHoldProxy(t *testing.T, target string) *holdProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	p := &holdProxy{addr: ln.Addr().String(), held: make(chan chan struct{}, 1)}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			var gate chan struct{}
			if p.armed {
				p.armed = false
				gate = make(chan struct{})
				p.held <- gate
			}
			p.mu.Unlock()
			go func() {
				if gate != nil {
					<-gate
				}
				up, err := net.Dial("tcp", target)
				if err != nil {
					c.Close()
					return
				}
				go func() { io.Copy(up, c); up.Close() }()
				io.Copy(c, up)
				c.Close()
			}()
		}
	}()
	return p
}

func (p *holdProxy) arm() {
	p.mu.Lock()
	p.armed = true
	p.mu.Unlock()
}

// cmdlineHas reports whether the running process pid has s in its
// command line (false once it has exited).
func cmdlineHas(pid int, s string) (has, running bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil || len(b) == 0 {
		return false, false
	}
	return bytes.Contains(b, []byte(s)), true
}

// TestCapturePasswordNeverInArgv captures a server whose account has a
// password, given by environment variable and by file: the build works and
// the password never appears in /proc/PID/cmdline of the running command.
// A password in the URL still works but is overwritten in argv and warned
// about; a silent source fails within --source-timeout, naming it.
func TestCapturePasswordNeverInArgv(t *testing.T) {
	e := newEnv(t)
	src := mariadbtest.Start(t)
	const pw = "Sup3r-secret-capture-pw"
	db := mariadbtest.Open(t, src, "")
	for _, q := range []string{
		"CREATE DATABASE app", "CREATE TABLE app.t (id INT PRIMARY KEY)", "INSERT INTO app.t VALUES (1), (2)",
		"CREATE USER cap@'%' IDENTIFIED BY '" + pw + "'", "GRANT ALL ON *.* TO cap@'%'",
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	// pristine reaches the source through a proxy that holds the first
	// connection of each build until the test has read the command line of
	// the running process.
	proxy := newHoldProxy(t, net.JoinHostPort("127.0.0.1", strconv.Itoa(src.Config.Port)))
	url := "mysql://cap@" + proxy.addr + "/"
	pwFile := filepath.Join(t.TempDir(), "pw")
	os.WriteFile(pwFile, []byte(pw+"\n"), 0o600)

	build := func(t *testing.T, env []string, args ...string) (string, string, error) {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"--root", e.root, "template", "build"}, args...)...)
		cmd.Env = append(os.Environ(), env...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		proxy.arm()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		release := <-proxy.held
		has, running := cmdlineHas(cmd.Process.Pid, pw)
		close(release)
		err := cmd.Wait()
		if !running || has {
			t.Fatalf("while connecting to the source: running %v, password in /proc/%d/cmdline %v", running, cmd.Process.Pid, has)
		}
		return out.String(), errb.String(), err
	}
	for _, tc := range []struct {
		name string
		env  []string
		args []string
	}{
		{"env", []string{"PRISTINE_SOURCE_PASSWORD=" + pw}, nil},
		{"mysql env", []string{"MYSQL_PWD=" + pw}, nil},
		{"file", nil, []string{"--password-file", pwFile}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := "cap-" + strings.ReplaceAll(tc.name, " ", "-")
			out, errOut, err := build(t, tc.env, append([]string{name, "--from-server", url, "--databases", "app", "--method", "logical"}, tc.args...)...)
			if err != nil || !strings.Contains(out, "built") {
				t.Fatalf("capture with the password from %s: %v\n%s%s", tc.name, err, out, errOut)
			}
		})
	}
	// Without it the source refuses the account: the password was needed.
	if _, errOut, err := build(t, []string{"PRISTINE_SOURCE_PASSWORD=", "MYSQL_PWD="}, "nopw", "--from-server", url, "--databases", "app"); err == nil || !strings.Contains(errOut, "Access denied") {
		t.Fatalf("capture without a password: %v %s", err, errOut)
	}

	// A source that accepts and never speaks: the URL's password is
	// overwritten in argv, with a warning, and the build fails in time.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	addr := ln.Addr().String()
	const urlPW = "url-secret-visible"
	cmd := exec.Command(bin, "--root", e.root, "template", "build", "silent", "--from-server", "mysql://cap:"+urlPW+"@"+addr+"/", "--source-timeout", "1m")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := <-accepted // pristine is connecting: its arguments were handled
	has, running := cmdlineHas(cmd.Process.Pid, urlPW)
	scrubbed, _ := cmdlineHas(cmd.Process.Pid, "cap:"+strings.Repeat("x", len(urlPW))+"@")
	c.Close()
	cmd.Wait()
	if !running || has || !scrubbed {
		t.Fatalf("cmdline while connecting: running %v, has the password %v, overwritten %v", running, has, scrubbed)
	}
	if !strings.Contains(errb.String(), "visible to every local user") {
		t.Fatalf("no warning about the password in the URL: %s", errb.String())
	}
	_, errOut, err := runBin([]string{"PRISTINE_SOURCE_PASSWORD=" + pw}, "--root", e.root, "template", "build", "silent", "--from-server", "mysql://cap@"+addr+"/", "--source-timeout", "1s")
	if err == nil || !strings.Contains(errOut, addr) || !strings.Contains(errOut, "within 1s") {
		t.Fatalf("a silent source: %v %s", err, errOut)
	}
}
