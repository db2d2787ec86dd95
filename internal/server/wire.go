package server

import (
	"github.com/pristinedb/pristine/api"
	"github.com/pristinedb/pristine/internal/catalog"
	"github.com/pristinedb/pristine/internal/pool"
)

// The daemon's state becomes package api's wire types here, at the edge;
// passwords go out as api.Secret, which marshals as "" unless revealed.

// leaseFor is the lease handed to its holder: with its credentials.
func leaseFor(l pool.Lease) api.Lease { return leaseOut(l).WithCredentials() }

// leaseOut is a lease as anyone may see it: without credentials.
func leaseOut(l pool.Lease) api.Lease {
	return api.Lease{ID: l.ID, Template: l.Template, Slot: l.Slot, Holder: l.Holder, Host: l.Host, Port: l.Port,
		Socket: l.Socket, User: l.User, Password: api.Hidden(l.Password), Database: l.Database, DSN: l.DSN, URL: l.URL,
		Created: l.Created, Expires: l.Expires, Env: l.Env, OptionFile: l.OptionFile, Kept: l.Kept,
		PID: l.PID, PIDStart: l.PIDStart, Clone: l.Clone, CA: l.CA, Group: l.Group}
}

// StatusOut is a pool's status on the wire.
func StatusOut(st pool.Status) api.PoolStatus {
	out := api.PoolStatus{Template: st.Template, Hash: st.Hash, Size: st.Size, Base: st.Base, DBsPerSlot: st.DBsPerSlot,
		Backend: st.Backend, Leased: st.Leased, WaitP50MS: st.WaitP50MS, WaitP99MS: st.WaitP99MS,
		ResetP50MS: st.ResetP50MS, ResetP99MS: st.ResetP99MS, ResetMaxMS: st.ResetMaxMS, DiskCap: st.DiskCap, MemoryCap: st.MemoryCap,
		Stats: api.PoolStats{UpSeconds: st.Stats.UpSeconds, Leases: st.Stats.Leases, Expired: st.Stats.Expired,
			HolderGone: st.Stats.HolderGone, Reused: st.Stats.Reused, JournalErrors: st.Stats.JournalErrors,
			Replaced: st.Stats.Replaced, ResetFailures: st.Stats.ResetFailures, OverCap: st.Stats.OverCap, CapKills: st.Stats.CapKills,
			SlotDeaths: st.Stats.SlotDeaths, LeasesLost: st.Stats.LeasesLost,
			Grown: st.Stats.Grown, ShrunkIdle: st.Stats.ShrunkIdle, GrownForWaits: st.Stats.GrownForWaits, IllegalMoves: st.Stats.IllegalMoves,
			ResetPaths: st.Stats.ResetPaths, TablesRestored: st.Stats.TablesRestored}}
	out.Processes = st.Processes
	if st.States != nil {
		out.States = make(map[string]int, len(st.States))
		for k, n := range st.States {
			out.States[string(k)] = n
		}
	}
	for _, s := range st.Slots {
		out.Slots = append(out.Slots, api.SlotStatus{Slot: s.Slot, State: string(s.State), Port: s.Port, PID: s.PID,
			Leases: s.Leases, Since: s.Since, Error: s.Error})
	}
	return out
}

// TemplateOut is a template's description on the wire (catalog.Meta.API):
// its build account's password never goes out.
func TemplateOut(m *catalog.Meta) *api.Template { return m.API() }

// TemplatesOut is TemplateOut of each; nil stays nil.
func TemplatesOut(all []*catalog.Meta) []*api.Template { return catalog.APIList(all) }
