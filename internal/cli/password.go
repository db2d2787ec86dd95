package cli

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/pristinedb/pristine/internal/dsn"
)

// Environment variables a capture source's password is read from, in this
// order, when neither --password-file nor --password-prompt is given.
const (
	EnvSourcePassword = "PRISTINE_SOURCE_PASSWORD"
	EnvMySQLPassword  = "MYSQL_PWD"
)

// PasswordFlags say where the password of a --from-server source comes
// from; never the command line (see docs/capture.md).
type PasswordFlags struct {
	File   string // --password-file
	Prompt bool   // --password-prompt
}

// sourcePassword returns the password for the source URL raw: from
// --password-file, --password-prompt, $PRISTINE_SOURCE_PASSWORD or
// $MYSQL_PWD. A password written in the URL itself still works, but it is
// visible in the process list: pristine overwrites it in its own argv at
// once (as the mysql client does) and warns. It returns "" when the URL's
// own password (or none) is to be used.
func (g *Globals) sourcePassword(raw string, pf PasswordFlags) (string, error) {
	cfg, err := dsn.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("--from-server: %w", err)
	}
	inURL := cfg.Passwd != ""
	n := 0
	for _, b := range []bool{inURL, pf.File != "", pf.Prompt} {
		if b {
			n++
		}
	}
	if n > 1 {
		return "", fmt.Errorf("%w: give the source's password one way: in the URL, --password-file or --password-prompt", ErrUsage)
	}
	switch {
	case inURL:
		scrubArgv(raw)
		g.stderrf("pristine: warning: the password in --from-server was visible to every local user in the process list (/proc/PID/cmdline) "+
			"until pristine overwrote it, and stays in your shell history: use $%s, --password-file or --password-prompt", EnvSourcePassword)
		return "", nil
	case pf.File != "":
		return readPasswordFile(pf.File, g.stderrf)
	case pf.Prompt:
		return promptPassword(fmt.Sprintf("password for %s: ", dsn.Redacted(cfg)))
	}
	for _, env := range []string{EnvSourcePassword, EnvMySQLPassword} {
		if v, ok := os.LookupEnv(env); ok && v != "" {
			return v, nil
		}
	}
	return "", nil
}

// readPasswordFile reads a password from the first line of a file; it
// warns when others may read the file.
func readPasswordFile(path string, warnf func(string, ...any)) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("--password-file: %w", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Mode().Perm()&0o077 != 0 {
		warnf("pristine: warning: --password-file %s has mode %04o: other users may read it (chmod 600 %s)", path, st.Mode().Perm(), path)
	}
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil && line == "" {
		return "", fmt.Errorf("--password-file %s: empty: write the password on its first line", path)
	}
	pw := strings.TrimRight(line, "\r\n")
	if pw == "" {
		return "", fmt.Errorf("--password-file %s: the first line is empty: write the password on it", path)
	}
	return pw, nil
}

// promptPassword reads a password on the controlling terminal without
// echoing it.
func promptPassword(prompt string) (string, error) {
	tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		return "", fmt.Errorf("--password-prompt needs a terminal (%v): use $%s or --password-file instead", err, EnvSourcePassword)
	}
	defer tty.Close()
	fd := int(tty.Fd())
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return "", fmt.Errorf("--password-prompt needs a terminal: use $%s or --password-file instead", EnvSourcePassword)
	}
	quiet := *old
	quiet.Lflag &^= unix.ECHO
	quiet.Lflag |= unix.ICANON | unix.ISIG
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, &quiet); err != nil {
		return "", fmt.Errorf("--password-prompt: %w", err)
	}
	defer unix.IoctlSetTermios(fd, unix.TCSETS, old)
	fmt.Fprint(tty, prompt)
	line, err := bufio.NewReader(tty).ReadString('\n')
	fmt.Fprintln(tty)
	if err != nil && line == "" {
		return "", errors.New("--password-prompt: no password read")
	}
	return strings.TrimRight(line, "\r\n"), nil
}

// scrubArgv overwrites the password of the URL raw wherever it appears in
// the process's own argv, so /proc/PID/cmdline stops showing it. os.Args
// strings share the memory the kernel shows as cmdline; raw must not (the
// caller keeps a copy).
func scrubArgv(raw string) {
	start := 0
	if i := strings.Index(raw, "://"); i >= 0 {
		start = i + 3
	}
	at := strings.LastIndex(raw, "@")
	if at < start {
		return
	}
	colon := strings.Index(raw[start:at], ":")
	if colon < 0 {
		return
	}
	from, to := start+colon+1, at // the password's bytes within raw
	for _, a := range os.Args {
		for off := 0; ; {
			k := strings.Index(a[off:], raw)
			if k < 0 {
				break
			}
			b := unsafe.Slice(unsafe.StringData(a), len(a))
			for j := off + k + from; j < off+k+to; j++ {
				b[j] = 'x'
			}
			off += k + len(raw)
		}
	}
}
