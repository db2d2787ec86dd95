package cli

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pristinedb/pristine/api"
	"github.com/pristinedb/pristine/internal/units"
)

func newPoolCmd(g *Globals) *cobra.Command {
	cmd := &cobra.Command{Use: "pool", Short: "bring pools of thin-clone servers up and down"}
	cmd.AddCommand(newPoolUpCmd(g), newPoolStatusCmd(g), newPoolDownCmd(g))
	return cmd
}

// PoolUpFlags are the flags of `pool up`.
type PoolUpFlags struct {
	Template   string
	Size       int
	BufferPool string
	Parallel   int
	SlotDisk   string
	SlotMemory string
	MinReady   int
}

func newPoolUpCmd(g *Globals) *cobra.Command {
	var f PoolUpFlags
	cmd := &cobra.Command{
		Use:   "up [--template NAME] --size N",
		Short: "bring up N slots, each a server on its own clone of the template",
		Long: `Brings up N slots, each a server on its own clone of the template.

A slot serves one lease at a time, or K with a template built with
--dbs-per-slot K: N slots then serve N x K leases. One database per slot
is the default and the right one for MariaDB, whose servers start in about
0.1 s of CPU. A MySQL server costs 5-7 times that to start and to keep
idle: for MySQL templates, --dbs-per-slot 4 to 8 brought 200 databases up
in 1.6x to 0.6x the time MariaDB takes with one per slot (docs/benchmarks.md,
"Fewer MySQL servers").`,
		Example: `  pristine pool up --size 8                   # the only template
  pristine pool up --template app --size 50 --buffer-pool 32M
  pristine pool up --size 200 --min-ready 200  # return once every slot answered`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			start := time.Now()
			st, err := RunPoolUp(cmd.Context(), g, f)
			if err != nil {
				return err
			}
			if g.JSON {
				return g.printJSON(st)
			}
			n := st.States["starting"]
			switch {
			case n > 0 && st.Size > st.Base:
				// A pool that was up already, grown to --size.
				fmt.Fprintf(g.IO.Out, "pool %s: grown to %d slots, %d of them starting (the ones beyond %d go again after the daemon's --shrink-after idle)\n", st.Template, st.Size, n, st.Base)
			case n > 0:
				fmt.Fprintf(g.IO.Out, "pool %s: %d of %d slots ready in %.2fs, %d still starting in the background (%s backend): leases wait for them; `pristine pool status` shows them\n",
					st.Template, st.Size-n, st.Size, time.Since(start).Seconds(), n, st.Backend)
			default:
				fmt.Fprintf(g.IO.Out, "pool %s: %d slots ready in %.2fs (%s backend)\n", st.Template, st.Size, st.Stats.UpSeconds, st.Backend)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&f.Template, "template", "", "template name or hash (default: the only template)")
	cmd.Flags().IntVar(&f.Size, "size", 4, "number of slots (a pool of the template that is up with fewer is grown to it)")
	cmd.Flags().StringVar(&f.BufferPool, "buffer-pool", "", "innodb_buffer_pool_size of each slot (default 16M)")
	cmd.Flags().IntVar(&f.Parallel, "parallel", 0, "slots started at once (default 4 per core)")
	cmd.Flags().IntVar(&f.MinReady, "min-ready", 0, "return once this many slots answer; the others go on starting in the daemon and each serves waiting leases as soon as it answers (default: the first round of starts, min(--size, --parallel); --size: every slot)")
	cmd.Flags().StringVar(&f.SlotDisk, "slot-disk", "1G", "what each slot may write beyond the template; past it the slot's writes fail with \"Disk quota exceeded\" and other slots go on (btrfs scratch: qgroup; XFS scratch: project quota; plain copies: not capped); \"none\" for no cap")
	cmd.Flags().StringVar(&f.SlotMemory, "slot-memory", "256M", "the most memory one MEMORY table, one temporary table and one session of a slot may take (max_heap_table_size, tmp_table_size and max_session_mem_used, with ceilings a lease cannot raise); \"none\" for the server's own limits, which a lease can raise")
	return cmd
}

// RunPoolUp asks the daemon (started if needed) for a pool.
func RunPoolUp(ctx context.Context, g *Globals, f PoolUpFlags) (*api.PoolStatus, error) {
	if f.Template == "" {
		name, err := g.onlyTemplate(ctx)
		if err != nil {
			return nil, err
		}
		f.Template = name
	}
	if f.MinReady < 0 {
		return nil, fmt.Errorf("%w: --min-ready %d: give 0 (the first round of starts) or more", ErrUsage, f.MinReady)
	}
	req := api.PoolRequest{Template: f.Template, Size: f.Size, Parallel: f.Parallel, MinReady: f.MinReady}
	if f.BufferPool != "" {
		n, err := parseBytes(f.BufferPool)
		if err != nil {
			return nil, err
		}
		req.BufferPool = n
	}
	switch f.SlotDisk {
	case "", "none", "0":
		req.SlotDisk = -1
	default:
		n, err := parseBytes(f.SlotDisk)
		if err != nil {
			return nil, err
		}
		req.SlotDisk = n
	}
	switch f.SlotMemory {
	case "", "none", "0":
		req.SlotMemory = -1
	default:
		n, err := parseBytes(f.SlotMemory)
		if err != nil {
			return nil, err
		}
		req.SlotMemory = n
	}
	c, _, err := g.daemon(ctx, true)
	if err != nil {
		return nil, err
	}
	tty := g.ErrIsTerminal()
	start := time.Now()
	st, err := c.PoolUp(ctx, req, func(ready, total int) {
		if tty {
			fmt.Fprintf(g.IO.Err, "\rpristine: %d/%d slots ready (%.1fs)", ready, total, time.Since(start).Seconds())
		}
	})
	if tty {
		fmt.Fprintln(g.IO.Err)
	}
	return st, err
}

func newPoolStatusCmd(g *Globals) *cobra.Command {
	var name string
	var slots bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "show the pools that are up, their slots and timings",
		Example: `  pristine pool status
  pristine pool status --slots --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, _, err := g.daemon(cmd.Context(), false)
			if err != nil {
				return err
			}
			var all []api.PoolStatus
			if name != "" || slots {
				names := []string{name}
				if name == "" {
					ps, err := c.Pools(cmd.Context())
					if err != nil {
						return err
					}
					names = names[:0]
					for _, p := range ps {
						names = append(names, p.Template)
					}
				}
				for _, n := range names {
					st, err := c.PoolDisk(cmd.Context(), n)
					if err != nil {
						return err
					}
					all = append(all, *st)
				}
			} else if all, err = c.Pools(cmd.Context()); err != nil {
				return err
			} else {
				for i := range all {
					// One pool's status measures its disk use.
					if st, err := c.PoolDisk(cmd.Context(), all[i].Template); err == nil {
						all[i].Disk = st.Disk
					}
				}
			}
			if g.JSON {
				if all == nil {
					all = []api.PoolStatus{}
				}
				return g.printJSON(all)
			}
			if len(all) == 0 {
				fmt.Fprintln(g.IO.Out, "no pools are up: start one with `pristine pool up --template NAME --size N`")
			}
			for _, st := range all {
				g.printPoolStatus(st)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&name, "template", "", "one pool, with its slots")
	cmd.Flags().BoolVar(&slots, "slots", false, "list every slot")
	return cmd
}

func (g *Globals) printPoolStatus(st api.PoolStatus) {
	states := make([]string, 0, len(st.States))
	for s, n := range st.States {
		states = append(states, fmt.Sprintf("%s=%d", s, n))
	}
	sort.Strings(states)
	fmt.Fprintf(g.IO.Out, "pool %s (%s): %d slots x %d db, %s backend; %v; %d leased\n", st.Template, st.Hash[:12], st.Size, st.DBsPerSlot, st.Backend, states, st.Leased)
	if n := st.States["starting"]; n > 0 {
		fmt.Fprintf(g.IO.Out, "  %d slots starting: each serves waiting leases as soon as it answers\n", n)
	}
	if n := st.States["failed"]; n > 0 {
		fmt.Fprintf(g.IO.Out, "  %d slots failed, retried every second: `pristine pool status --slots` shows why\n", n)
	}
	if st.DiskCap != "" {
		fmt.Fprintf(g.IO.Out, "  disk cap: %s\n", st.DiskCap)
	}
	if d := st.Disk; d != nil && d.Error != "" {
		fmt.Fprintf(g.IO.Out, "  disk use: not measured: %s\n", d.Error)
	} else if d != nil {
		fmt.Fprintf(g.IO.Out, "  disk use (%s): template %s logical, %s physical; slots %s logical, %s physical of their own\n", d.Method,
			units.Bytes(d.TemplateLogical), units.Bytes(d.TemplatePhysical), units.Bytes(d.SlotsLogical), units.Bytes(d.SlotsPhysical))
	}
	if st.Processes != "" {
		fmt.Fprintf(g.IO.Out, "  slot processes: %s\n", st.Processes)
	}
	fmt.Fprintf(g.IO.Out, "  leases %d (expired %d), replaced %d; lease wait p50 %.2f ms p99 %.2f ms; reset p50 %.0f ms p99 %.0f ms\n",
		st.Stats.Leases, st.Stats.Expired, st.Stats.Replaced, st.WaitP50MS, st.WaitP99MS, st.ResetP50MS, st.ResetP99MS)
	for _, s := range st.Slots {
		line := fmt.Sprintf("  slot %3d  %-9s port %d pid %d", s.Slot, s.State, s.Port, s.PID)
		if s.Error != "" {
			line += "  " + s.Error
		}
		fmt.Fprintln(g.IO.Out, line)
	}
}

func newPoolDownCmd(g *Globals) *cobra.Command {
	var name string
	var all bool
	cmd := &cobra.Command{
		Use:   "down [--template NAME | --all]",
		Short: "stop a pool's servers and remove its clones",
		Example: `  pristine pool down                # the only pool
  pristine pool down --all          # every pool, and the daemon`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, _, err := g.daemon(cmd.Context(), false)
			if err != nil {
				return err
			}
			if all {
				if err := c.Shutdown(cmd.Context()); err != nil {
					return err
				}
				if !g.JSON {
					fmt.Fprintln(g.IO.Out, "daemon stopping; every pool is going down")
				}
				return nil
			}
			if name == "" {
				ps, err := c.Pools(cmd.Context())
				if err != nil {
					return err
				}
				if len(ps) != 1 {
					return fmt.Errorf("%w: %d pools are up: name one with --template, or use --all", ErrUsage, len(ps))
				}
				name = ps[0].Template
			}
			st, err := c.PoolDown(cmd.Context(), name)
			if err != nil {
				return err
			}
			if g.JSON {
				return g.printJSON(st)
			}
			fmt.Fprintf(g.IO.Out, "pool %s down: %d slots stopped and removed\n", st.Template, st.Size)
			return nil
		},
	}
	cmd.Flags().StringVar(&name, "template", "", "the pool to bring down (default: the only one)")
	cmd.Flags().BoolVar(&all, "all", false, "bring every pool down and stop the daemon")
	return cmd
}

// onlyTemplate is the name of the root's only template, the default of
// `pool up`; with none or several it says what to do.
func (g *Globals) onlyTemplate(ctx context.Context) (string, error) {
	st, err := g.openBuilder(ctx, "auto")
	if err != nil {
		return "", err
	}
	all, err := st.Catalog().List()
	if err != nil {
		return "", err
	}
	names := map[string]bool{}
	var list []string
	for _, m := range all {
		if !names[m.Name] {
			names[m.Name] = true
			list = append(list, m.Name)
		}
	}
	switch len(list) {
	case 1:
		return list[0], nil
	case 0:
		return "", fmt.Errorf("%w: no template on %s yet: build one with `pristine template build NAME --from-sql FILE`", ErrUsage, st.Catalog().Root().Data())
	default:
		sort.Strings(list)
		return "", fmt.Errorf("%w: %d templates (%s): name one with --template", ErrUsage, len(list), strings.Join(list, ", "))
	}
}
