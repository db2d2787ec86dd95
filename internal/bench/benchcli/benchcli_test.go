package benchcli

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pristinedb/pristine/internal/cli"
)

// TestBadInput runs pristine-bench in-process with input every command
// must refuse before it measures anything: exit 2 (cli.ExitBadInput),
// naming what is wrong.
func TestBadInput(t *testing.T) {
	root := filepath.Join(t.TempDir(), "root")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"nosuch"}, `unknown command "nosuch"`},
		{[]string{"bench", "--workload", "nope"}, `--workload "nope": want demo, demo10 or tables30k`},
		{[]string{"bench", "--methods", "nope"}, `--methods "nope"`},
		{[]string{"bench", "--copies", "0"}, "--copies"},
		{[]string{"bench", "--dbs-per-slot", "x"}, "--dbs-per-slot"},
		{[]string{"bench", "extra"}, "unknown command"},
		{[]string{"bench", "--compression", "--compress-variants", "nope"}, `--compress-variants "nope": want some of plain, zstd, zstd+innodb, innodb`},
		{[]string{"bench", "--compression", "--compress-slots", "0"}, "--compress-slots, --soak-clients and --soak-time must be positive"},
		{[]string{"bench", "--compression", "--scratch-size", "lots"}, "--scratch-size"},
		{[]string{"soak", "extra"}, "unknown command"},
		{[]string{"soak", "--hold", "forever"}, "invalid argument"},
		{[]string{"bench-archive", "--runs", "x"}, "invalid argument"},
		{[]string{"bench-capture", "extra"}, "unknown command"},
		{[]string{"bench-fleet", "--runs", "x"}, "invalid argument"},
		{[]string{"front-page"}, "--run names the saved demo run"},
		{[]string{"front-page", "extra"}, "unknown command"},
	} {
		var out, errb bytes.Buffer
		code := cli.ExecuteContext(context.Background(), NewRoot(cli.Stdio{In: strings.NewReader(""), Out: &out, Err: &errb}),
			append([]string{"--root", root}, c.args...))
		if code != cli.ExitBadInput || !strings.Contains(errb.String(), c.want) {
			t.Errorf("pristine-bench %s: exit %d, stderr %q; want %d and %q", strings.Join(c.args, " "), code, errb.String(), cli.ExitBadInput, c.want)
		}
	}
}

// TestHelpListsTheBenchmarks: pristine-bench's help lists every benchmark.
func TestHelpListsTheBenchmarks(t *testing.T) {
	var out bytes.Buffer
	if code := cli.ExecuteContext(context.Background(), NewRoot(cli.Stdio{In: strings.NewReader(""), Out: &out, Err: &out}), []string{"--help"}); code != 0 {
		t.Fatalf("--help: exit %d: %s", code, out.String())
	}
	for _, name := range []string{"bench", "soak", "bench-archive", "bench-capture", "bench-fleet", "overhead", "fork", "pertest", "front-page", "vs"} {
		if !strings.Contains(out.String(), "\n  "+name+" ") {
			t.Errorf("pristine-bench --help does not list %s:\n%s", name, out.String())
		}
	}
}
