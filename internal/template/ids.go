package template

import (
	"errors"
	"io/fs"

	"github.com/pristinedb/pristine/internal/cow"
	"github.com/pristinedb/pristine/internal/svcuser"
)

// Every server a build starts (the base's bootstrap, a build, an API
// build, the private server that secures an import or a physical copy, a
// verify or bench clone) runs under a server id of its own
// (svcuser.Claim), which owns the data directory only while that server
// may run. When it has stopped, the tree is sealed (given to pristine's own
// user, out of every server's reach) or removed, and only then is the id
// given back: a template or base is never writable by any server, and a
// build server cannot write into other templates.

// claim returns the server id of the data directory data, claiming one on
// first use.
func (b *Builder) claim(data string) (*svcuser.Claimed, error) {
	b.idMu.Lock()
	defer b.idMu.Unlock()
	if id := b.ids[data]; id != nil {
		return id, nil
	}
	id, err := svcuser.Claim(data)
	if err != nil {
		return nil, err
	}
	if b.ids == nil {
		b.ids = map[string]*svcuser.Claimed{}
	}
	b.ids[data] = id
	return id, nil
}

// seal gives the data directory data, whose server has stopped, to
// pristine's user (if it is still there) and then releases its server id.
// It is safe to call more than once (only the first does anything) and on
// a removed directory.
func (b *Builder) seal(data string) error {
	b.idMu.Lock()
	id := b.ids[data]
	delete(b.ids, data)
	b.idMu.Unlock()
	if id == nil {
		return nil // sealed already, or never given to a server id
	}
	target := data
	if st := b.ramStageHolding(data); st != nil {
		target = st.dir // the staging directory too, before the id goes
	}
	err := svcuser.Seal(target)
	if errors.Is(err, fs.ErrNotExist) {
		err = nil
	}
	if err != nil {
		b.idMu.Lock()
		b.ids[data] = id // keep it: the tree still belongs to it
		b.idMu.Unlock()
		return err
	}
	id.Release()
	return nil
}

// ownerOf is who the files of a clone for id belong to; the template's
// shareable files stay the template's (svcuser.DataGID).
func ownerOf(id *svcuser.Claimed) *cow.Owner {
	if id == nil || !id.Drop {
		return nil
	}
	return &cow.Owner{UID: id.UID, GID: id.GID, Shared: svcuser.DataGID}
}
