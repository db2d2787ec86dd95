package pool

import (
	"github.com/pristinedb/pristine/api"
	"github.com/pristinedb/pristine/internal/diskuse"
)

// DiskUse measures the template's data directory, then the pool's clones
// (its slots and seeds), counting each extent once: the slots' physical
// bytes are what they add to the template's. It walks every file, so it
// runs outside the pool's lock and only when one pool's status is asked
// for; errors are reported in the result.
func (p *Pool) DiskUse() *api.DiskUse {
	c := diskuse.NewCounter()
	out := &api.DiskUse{}
	if p.cat != nil {
		if err := c.Add(p.cat.DataDir(p.Meta.Hash)); err != nil {
			out.Error = err.Error()
			return out
		}
	}
	out.TemplateLogical, out.TemplatePhysical = c.Logical, c.Physical
	if err := c.Add(p.dir); err != nil {
		out.Error = err.Error()
		return out
	}
	out.SlotsLogical, out.SlotsPhysical = c.Logical-out.TemplateLogical, c.Physical-out.TemplatePhysical
	out.Method = c.Method
	return out
}
