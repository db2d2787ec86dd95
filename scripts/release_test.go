package scripts

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestRelease runs scripts/release.sh in a fresh clone of the committed
// state (this machine's architecture only: the other is the same build
// with another GOARCH) and checks what it made: static binaries stamped
// with the version and commit, man pages and completions in the tarball,
// the checksums, and the .deb's fields and files.
func TestRelease(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the release (minutes): not with -short")
	}
	for _, tool := range []string{"git", "dpkg-deb", "sha256sum"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s", tool)
		}
	}
	repo, _ := filepath.Abs("..")
	clone := filepath.Join(t.TempDir(), "pristine")
	run := func(dir string, env []string, name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir, cmd.Env = dir, append(append(os.Environ(), "PATH="+filepath.Join(runtime.GOROOT(), "bin")+":"+os.Getenv("PATH")), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run(repo, nil, "git", "clone", "-q", repo, clone)
	commit := strings.TrimSpace(run(clone, nil, "git", "rev-parse", "HEAD"))
	// The client packages are built, installed and run by
	// scripts/test-client-packages.sh through the script release.sh calls.
	run(clone, []string{"RELEASE_ARCHES=" + runtime.GOARCH, "PRISTINE_VERSION=v9.8.7", "RELEASE_CLIENTS=0"}, "bash", "scripts/release.sh")
	dist := filepath.Join(clone, "dist")
	run(dist, nil, "sha256sum", "-c", "SHA256SUMS")

	name := "pristine_v9.8.7_linux_" + runtime.GOARCH
	run(dist, nil, "tar", "-xzf", name+".tar.gz", "-C", t.TempDir())
	listing := run(dist, nil, "tar", "-tzf", name+".tar.gz")
	for _, want := range []string{name + "/pristine", name + "/pristine-bench", name + "/man/man1/pristine-serve.1.gz",
		name + "/man/man1/pristine-bench.1.gz", name + "/completions/pristine.bash", name + "/completions/_pristine", name + "/completions/pristine.fish"} {
		if !strings.Contains(listing, want+"\n") {
			t.Errorf("%s.tar.gz lacks %s", name, want)
		}
	}
	for _, bin := range []string{"pristine", "pristine-bench"} {
		path := filepath.Join(dist, "build", name, bin)
		f, err := elf.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
				t.Errorf("%s is linked dynamically (program header %v): want a static binary", bin, p.Type)
			}
		}
		f.Close()
	}
	version := run(dist, nil, filepath.Join(dist, "build", name, "pristine"), "--version")
	if !strings.Contains(version, "pristine v9.8.7 (commit "+commit[:12]) {
		t.Errorf("pristine --version does not name v9.8.7 and commit %s:\n%s", commit[:12], version)
	}

	deb := filepath.Join(dist, "pristine_9.8.7_"+runtime.GOARCH+".deb")
	for field, want := range map[string]string{
		"Package": "pristine", "Version": "9.8.7", "Architecture": runtime.GOARCH,
		"Depends": "mariadb-server | default-mysql-server, btrfs-progs, xfsprogs",
	} {
		if got := strings.TrimSpace(run(dist, nil, "dpkg-deb", "-f", deb, field)); !strings.HasPrefix(got, want) {
			t.Errorf("the .deb's %s is %q, want %q", field, got, want)
		}
	}
	files := run(dist, nil, "dpkg-deb", "-c", deb)
	for _, want := range []string{"./usr/bin/pristine\n", "./lib/systemd/system/pristine.service\n", "./usr/share/man/man1/pristine-serve.1.gz\n",
		"./usr/share/bash-completion/completions/pristine\n"} {
		if !strings.Contains(files, want) {
			t.Errorf("the .deb lacks %s", strings.TrimSpace(want))
		}
	}
	if strings.Contains(files, "pristine-bench") {
		t.Errorf("the .deb carries pristine-bench, which the package leaves out:\n%s", files)
	}
	control := t.TempDir()
	run(dist, nil, "dpkg-deb", "-e", deb, control)
	for _, script := range []string{"postinst", "prerm", "postrm"} {
		if _, err := os.Stat(filepath.Join(control, script)); err != nil {
			t.Errorf("the .deb has no %s", script)
		}
	}
}
