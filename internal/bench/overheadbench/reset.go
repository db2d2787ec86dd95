package overheadbench

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/pristinedb/pristine/api"
	"github.com/pristinedb/pristine/client"
	"github.com/pristinedb/pristine/internal/catalog"
	"github.com/pristinedb/pristine/internal/pool"
	"github.com/pristinedb/pristine/internal/quote"
	"github.com/pristinedb/pristine/internal/server"
)

// poolResets leases a slot n times, deletes one row of table, releases
// the lease and waits until the slot is ready again, timing from the
// release to the slot's next ready (what a holder's next lease waits
// for) and the CPU of this process and of the slot's server meanwhile.
// It returns the medians, and how many resets of the pool were in place.
func poolResets(ctx context.Context, c *client.Client, m *catalog.Meta, table string, n int) (wallMS, cpuMS float64, inPlace int64, err error) {
	var walls, cpus []float64
	for range n {
		l, err := c.Lease(ctx, server.LeaseRequest{Template: m.Name, Holder: "pristine-bench overhead"})
		if err != nil {
			return 0, 0, 0, err
		}
		if err := change(ctx, l, table); err != nil {
			_, _ = c.Release(ctx, l.ID, false)
			return 0, 0, 0, err
		}
		pid, err := slotPID(ctx, c, m.Name, l.Slot)
		if err != nil {
			return 0, 0, 0, err
		}
		cpu0, srv0, t0 := selfCPU(), procCPU(pid), time.Now()
		if _, err := c.Release(ctx, l.ID, false); err != nil {
			return 0, 0, 0, err
		}
		if err := waitSlotReady(ctx, c, m.Name, l.Slot); err != nil {
			return 0, 0, 0, err
		}
		wall, self := time.Since(t0), selfCPU()-cpu0
		srv := procCPU(pid) - srv0
		if now, err := slotPID(ctx, c, m.Name, l.Slot); err == nil && now != pid {
			// A full reset: the server was replaced; the new one's start
			// is counted (the old one's dying is not).
			srv = procCPU(now)
		}
		walls = append(walls, ms(wall))
		cpus = append(cpus, ms(self+srv))
	}
	ps, err := c.Pool(ctx, m.Name)
	if err != nil {
		return 0, 0, 0, err
	}
	return median(walls), median(cpus), ps.Stats.ResetPaths["inplace"], nil
}

// change deletes one row of table through lease l.
func change(ctx context.Context, l *api.Lease, table string) error {
	db, err := sql.Open("mysql", l.DSN)
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "DELETE FROM "+quote.Ident(table)+" LIMIT 1"); err != nil {
		return fmt.Errorf("change %s through a lease: %w", table, err)
	}
	return nil
}

// slotPID is the pid of slot idx's server.
func slotPID(ctx context.Context, c *client.Client, name string, idx int) (int, error) {
	ps, err := c.Pool(ctx, name)
	if err != nil {
		return 0, err
	}
	for _, s := range ps.Slots {
		if s.Slot == idx {
			return s.PID, nil
		}
	}
	return 0, fmt.Errorf("pool %s has no slot %d", name, idx)
}

// waitSlotReady polls until slot idx is ready again, every millisecond at
// first, then less often.
func waitSlotReady(ctx context.Context, c *client.Client, name string, idx int) error {
	delay := time.Millisecond
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		ps, err := c.Pool(ctx, name)
		if err != nil {
			return err
		}
		for _, s := range ps.Slots {
			if s.Slot == idx && s.State == string(pool.Ready) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
		delay = min(2*delay, 10*time.Millisecond)
	}
	return fmt.Errorf("slot %d of %s was not ready again within 2 minutes of its release", idx, name)
}
