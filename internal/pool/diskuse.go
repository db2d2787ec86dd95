package pool

import (
	"sync"
	"time"

	"github.com/pristinedb/pristine/api"
	"github.com/pristinedb/pristine/internal/diskuse"
)

// diskCacheFor is how long a measure of DiskUse is reused: asking for a
// pool's status in a loop walks its files once per period, not once per
// request.
const diskCacheFor = 5 * time.Second

// diskCache holds the last DiskUse; its mutex also makes concurrent
// callers wait for one walk instead of each starting their own.
type diskCache struct {
	mu   sync.Mutex
	at   time.Time
	last *api.DiskUse
}

// DiskUse measures the template's data directory, then the pool's clones
// (its slots and seeds), counting each extent once: the slots' physical
// bytes are what they add to the template's. It walks every file, so it
// runs outside the pool's lock, only when one pool's status is asked for,
// and at most once per diskCacheFor; errors are reported in the result.
func (p *Pool) DiskUse() *api.DiskUse {
	p.disk.mu.Lock()
	defer p.disk.mu.Unlock()
	if p.disk.last != nil && time.Since(p.disk.at) < diskCacheFor {
		d := *p.disk.last
		return &d
	}
	d := p.measureDisk()
	p.disk.at, p.disk.last = time.Now(), d
	out := *d
	return &out
}

// measureDisk is DiskUse's walk.
func (p *Pool) measureDisk() *api.DiskUse {
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
