package capture

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/pristinedb/pristine/internal/archive"
	"github.com/pristinedb/pristine/internal/xbstream"
)

// backupTool finds mariadb-backup (or its old name, mariabackup).
func backupTool() (string, error) {
	for _, n := range []string{"mariadb-backup", "mariabackup"} {
		if p, err := exec.LookPath(n); err == nil {
			return p, nil
		}
		for _, d := range []string{"/usr/bin", "/usr/local/bin", "/usr/local/mysql/bin"} {
			if p := filepath.Join(d, n); isFile(p) {
				return p, nil
			}
		}
	}
	return "", errors.New("mariadb-backup is not installed (Debian: apt-get install mariadb-backup)")
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

var backupVersionRe = regexp.MustCompile(`server (\d+)\.(\d+)\.`)

// backupVersion runs `mariadb-backup --version`: it can only back up the
// server version it was built with.
func backupVersion(ctx context.Context, tool string) (major, minor int, err error) {
	out, err := exec.CommandContext(ctx, tool, "--version").CombinedOutput()
	if err != nil {
		return 0, 0, fmt.Errorf("%s --version: %w", tool, err)
	}
	m := backupVersionRe.FindStringSubmatch(string(out))
	if m == nil {
		return 0, 0, fmt.Errorf("%s --version: no version in %q", tool, strings.TrimSpace(string(out)))
	}
	major, _ = strconv.Atoi(m[1])
	minor, _ = strconv.Atoi(m[2])
	return major, minor, nil
}

// Physical copies the source's data directory with `mariadb-backup
// --backup` into datadir (an empty directory, which may be a btrfs
// subvolume) and prepares it with `mariadb-backup --prepare`. By default
// mariadb-backup writes the files itself, which on one host is about twice
// as fast as any stream; with Options.Stream it streams xbstream through a
// pipe into pristine's own reader instead (the path for a backup tool whose
// output arrives from elsewhere). With Source.Databases from --databases,
// only those and the mysql schema are copied. The prepared directory still
// has to be started once, which the template build does. The password
// reaches mariadb-backup through a mode-0600 option file, never its command
// line.
func Physical(ctx context.Context, src *Source, datadir string, alldbs bool, opt Options) (Stats, error) {
	start := time.Now()
	st := Stats{Method: "physical"}
	tool, err := backupTool()
	if err != nil {
		return st, err
	}
	if err := src.checkPhysical(); err != nil {
		return st, err
	}
	work, err := os.MkdirTemp(filepath.Dir(datadir), ".capture-")
	if err != nil {
		return st, fmt.Errorf("physical capture: %w", err)
	}
	defer os.RemoveAll(work)
	cnf := filepath.Join(work, "client.cnf")
	if err := os.WriteFile(cnf, []byte(src.optionFile()), 0o600); err != nil {
		return st, fmt.Errorf("physical capture: %w", err)
	}
	incoming := filepath.Join(datadir, ".incoming")
	args := []string{"--defaults-file=" + cnf, "--backup", "--datadir=" + src.Datadir, "--parallel=2"}
	if opt.Stream {
		args = append(args, "--stream=xbstream", "--target-dir="+filepath.Join(work, "tmp"))
		if err := os.Mkdir(filepath.Join(work, "tmp"), 0o700); err != nil {
			return st, err
		}
	} else {
		args = append(args, "--target-dir="+incoming)
	}
	args = append(args, src.innodbPaths(ctx)...)
	if !alldbs {
		args = append(args, "--databases="+strings.Join(append([]string{"mysql", "sys", "performance_schema"}, src.Databases...), " "))
	}
	cmd := exec.CommandContext(ctx, tool, args...)
	var stderr bytes.Buffer
	watch := &counterWatch{buf: &stderr, ctx: ctx, src: src, cmd: cmd}
	cmd.Stderr = watch
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if opt.Stream {
		err = streamBackup(ctx, cmd, &stderr, incoming, opt, &st)
	} else {
		err = copyBackup(cmd, &stderr, incoming, opt, &st)
	}
	if err != nil {
		return st, err
	}
	counters, atPoint, err := watch.result()
	if err != nil {
		return st, err
	}
	st.Counters, st.CountersAt = counters, "block-commit"
	if !atPoint {
		st.CountersAt = "after-backup"
		opt.log("AUTO_INCREMENT counters read after the backup (mariadb-backup did not report BLOCK_COMMIT)")
	}
	if err := moveUp(incoming, datadir); err != nil {
		return st, err
	}
	if m := regexp.MustCompile(`GTID of the last change '([^']*)'`).FindSubmatch(stderr.Bytes()); m != nil {
		st.GTID = string(m[1])
	}
	opt.log("preparing the copy (mariadb-backup --prepare)")
	prep := exec.CommandContext(ctx, tool, "--prepare", "--target-dir="+datadir, "--use-memory=256M")
	prep.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if out, err := prep.CombinedOutput(); err != nil {
		return st, fmt.Errorf("mariadb-backup --prepare failed: %w: %s", err, backupError(out))
	}
	// mariadb-backup's own files have no place in a data directory.
	for _, pat := range []string{"xtrabackup_*", "mariadb_backup_*", "backup-my.cnf"} {
		files, _ := filepath.Glob(filepath.Join(datadir, pat))
		for _, f := range files {
			os.Remove(f)
		}
	}
	st.Elapsed = time.Since(start)
	return st, nil
}

// copyBackup runs mariadb-backup writing the files into incoming itself;
// with a progress writer, the bytes arrived there are polled twice a
// second.
func copyBackup(cmd *exec.Cmd, stderr *bytes.Buffer, incoming string, opt Options, st *Stats) error {
	opt.log("copying the source's data directory with mariadb-backup")
	var done atomic.Int64
	stop := archive.StartProgress(opt.Progress, "copy", 0, &done)
	quit, polled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(polled)
		if opt.Progress == nil {
			return
		}
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				done.Store(treeBytes(incoming))
			case <-quit:
				return
			}
		}
	}()
	err := cmd.Run()
	close(quit)
	<-polled
	done.Store(treeBytes(incoming))
	stop()
	if err != nil {
		return fmt.Errorf("mariadb-backup --backup failed: %w: %s", err, backupError(stderr.Bytes()))
	}
	st.Bytes = done.Load()
	return nil
}

// streamBackup runs mariadb-backup --stream=xbstream and extracts its
// output into incoming with pristine's reader.
func streamBackup(ctx context.Context, cmd *exec.Cmd, stderr *bytes.Buffer, incoming string, opt Options, st *Stats) error {
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	opt.log("streaming the source's data directory with mariadb-backup")
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	xs, exErr := xbstream.Extract(ctx, stdout, incoming, xbstream.Options{Progress: opt.Progress, Backup: true})
	if exErr != nil {
		_, _ = io.Copy(io.Discard, stdout) // let the backup finish or fail on its own
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("mariadb-backup --backup failed: %w: %s", err, backupError(stderr.Bytes()))
	}
	if exErr != nil {
		return fmt.Errorf("extract the backup stream: %w", exErr)
	}
	st.Bytes = xs.DataBytes
	return nil
}

// treeBytes is the size of the regular files under dir.
func treeBytes(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// moveUp moves the entries of dir into its parent and removes dir.
func moveUp(dir, parent string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("physical capture: %w", err)
	}
	for _, e := range ents {
		if err := os.Rename(filepath.Join(dir, e.Name()), filepath.Join(parent, e.Name())); err != nil {
			return fmt.Errorf("physical capture: %w", err)
		}
	}
	return os.Remove(dir)
}

// backupError keeps the lines of mariadb-backup's chatter that explain a
// failure.
func backupError(out []byte) string {
	var keep []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, "rror") || strings.Contains(l, "FATAL") || strings.Contains(l, "missing required privilege") {
			keep = append(keep, strings.TrimSpace(l))
		}
	}
	if len(keep) == 0 {
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		keep = lines[max(0, len(lines)-3):]
	}
	if len(keep) > 5 {
		keep = keep[len(keep)-5:]
	}
	return strings.Join(keep, " | ")
}

// optionFile is a [client] option file with the source's credentials.
func (s *Source) optionFile() string {
	esc := func(v string) string { return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(v) + `"` }
	var b strings.Builder
	b.WriteString("[client]\n")
	b.WriteString("user=" + esc(s.Config.User) + "\n")
	if s.Config.Passwd != "" {
		b.WriteString("password=" + esc(s.Config.Passwd) + "\n")
	}
	if s.Config.Net == "unix" {
		b.WriteString("socket=" + esc(s.Config.Addr) + "\n")
	} else {
		host, port, _ := strings.Cut(s.Config.Addr, ":")
		if i := strings.LastIndexByte(s.Config.Addr, ':'); i >= 0 {
			host, port = strings.Trim(s.Config.Addr[:i], "[]"), s.Config.Addr[i+1:]
		}
		b.WriteString("host=" + esc(host) + "\nport=" + port + "\nprotocol=tcp\n")
	}
	return b.String()
}

// innodbPaths passes the source's InnoDB file locations to mariadb-backup,
// which reads files where the options (not the server) say they are.
func (s *Source) innodbPaths(ctx context.Context) []string {
	var args []string
	for _, v := range []struct{ variable, option string }{
		{"innodb_data_home_dir", "--innodb-data-home-dir"},
		{"innodb_log_group_home_dir", "--innodb-log-group-home-dir"},
		{"innodb_undo_directory", "--innodb-undo-directory"},
		{"innodb_data_file_path", "--innodb-data-file-path"},
		{"innodb_undo_tablespaces", "--innodb-undo-tablespaces"},
		{"innodb_page_size", "--innodb-page-size"},
	} {
		var val *string
		if err := s.DB.QueryRowContext(ctx, "SELECT @@"+v.variable).Scan(&val); err == nil && val != nil && *val != "" && *val != "./" {
			args = append(args, v.option+"="+*val)
		}
	}
	return args
}
