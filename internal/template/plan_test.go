package template_test

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/mariadb/mariadbtest"
	"github.com/pristinedb/pristine/internal/template"
	"github.com/pristinedb/pristine/internal/template/templatetest"
)

// TestCancelStopsTheProbe: every way into a build probes a live source
// with the caller's context, so Ctrl-C stops a probe of a source that
// hangs. The source is a real server stopped with SIGSTOP: it accepts the
// connection and never greets; the timeouts are far longer than the test.
func TestCancelStopsTheProbe(t *testing.T) {
	st := templatetest.NewBuilder(t, "auto")
	src := mariadbtest.Start(t)
	mariadbtest.Exec(t, mariadbtest.Open(t, src, ""), "CREATE DATABASE hang")
	if err := syscall.Kill(src.PID(), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(src.PID(), syscall.SIGCONT) })
	opt := template.BuildOptions{Name: "hang", Profile: mariadb.DefaultProfile(), Server: template.ServerSource{
		DSN: sourceURL(src), ConnectTimeout: 10 * time.Minute, IOTimeout: 10 * time.Minute}}
	for _, tc := range []struct {
		name string
		run  func(ctx context.Context) error
	}{
		{"plan", func(ctx context.Context) error {
			p, err := st.Plan(ctx, opt)
			if err == nil {
				p.Close()
			}
			return err
		}},
		{"hash", func(ctx context.Context) error { _, err := st.Hash(ctx, opt); return err }},
		{"build", func(ctx context.Context) error { _, _, err := st.Build(ctx, opt); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			// Cancelled once the probe is under way, as Ctrl-C would.
			stop := time.AfterFunc(200*time.Millisecond, cancel)
			defer stop.Stop()
			err := tc.run(ctx)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("%s of a hanging source, cancelled: %v; want it stopped with context.Canceled", tc.name, err)
			}
			t.Logf("%s: %v", tc.name, err)
			if list, _ := st.Catalog().List(); len(list) != 0 {
				t.Errorf("a cancelled probe left templates: %v", list)
			}
		})
	}
}
