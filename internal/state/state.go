// Package state keeps the daemon's state in an embedded store (bbolt) under
// the root, so a daemon that was killed and started again knows every pool
// and every lease it had. Records are JSON; the file is readable by its
// owner only, since leases carry their accounts' passwords.
package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
)

// FileName is the store's file under the root.
const FileName = "state.db"

var (
	bucketPools  = []byte("pools")
	bucketLeases = []byte("leases")
	// bucketLost holds leases that ended without their holder releasing
	// them (their slot died, or could not be restored), so the holder is
	// told why rather than "unknown".
	bucketLost = []byte("lost")
)

// lostKeep is how long a lost lease's record is kept.
const lostKeep = 7 * 24 * time.Hour

// Store is an open state file. Only one daemon can hold it.
type Store struct{ db *bolt.DB }

// ErrLocked means another daemon holds the state file.
var ErrLocked = errors.New("state file locked by another daemon")

// Open opens (creating) the state file in dir. Writes are not fsynced: the
// store must survive the daemon being killed, which the page cache does;
// a machine crash loses the servers anyway.
func Open(dir string) (*Store, error) {
	path := filepath.Join(dir, FileName)
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second, NoSync: true, NoFreelistSync: true})
	if err != nil {
		if errors.Is(err, bolt.ErrTimeout) {
			return nil, fmt.Errorf("%w: %s: stop the other daemon first (pristine pool down --all)", ErrLocked, path)
		}
		return nil, fmt.Errorf("open state %s: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketPools, bucketLeases, bucketLost} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return pruneLost(tx.Bucket(bucketLost), time.Now().Add(-lostKeep))
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open state %s: %w", path, err)
	}
	return &Store{db: db}, nil
}

// Close closes the file.
func (s *Store) Close() error { return s.db.Close() }

func (s *Store) put(bucket []byte, key string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucket).Put([]byte(key), b) })
}

func (s *Store) del(bucket []byte, key string) error {
	return s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucket).Delete([]byte(key)) })
}

// each decodes every record of a bucket with decode.
func (s *Store) each(bucket []byte, decode func(k, v []byte) error) error {
	return s.db.View(func(tx *bolt.Tx) error { return tx.Bucket(bucket).ForEach(decode) })
}

// Pool is what the daemon needs to bring a pool up again.
type Pool struct {
	Template   string `json:"template"`
	Hash       string `json:"hash"`
	Size       int    `json:"size"`
	BufferPool int64  `json:"buffer_pool"`
	Parallel   int    `json:"parallel"`
	// SlotDisk is each slot's disk cap in bytes; 0 or less: none.
	SlotDisk int64 `json:"slot_disk,omitempty"`
	// SlotMemory is each slot's memory ceiling in bytes
	// (pool.Options.SlotMemory); 0 or less: none.
	SlotMemory int64 `json:"slot_memory,omitempty"`
	// Slots is how many slots the pool had made when it last grew beyond
	// Size (its slots' numbers run from 0 to Slots-1): a restarted daemon
	// brings them all back, so leases on grown slots survive, and idle
	// shrinking takes the pool back to Size. 0: never grew.
	Slots int `json:"slots,omitempty"`
}

// PutPool records a pool that is up.
func (s *Store) PutPool(p Pool) error { return s.put(bucketPools, p.Template, p) }

// DeletePool forgets a pool and its leases.
func (s *Store) DeletePool(template string) error {
	if err := s.del(bucketPools, template); err != nil {
		return err
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketLeases)
		var doomed [][]byte
		err := b.ForEach(func(k, v []byte) error {
			var l struct {
				Template string `json:"template"`
			}
			if json.Unmarshal(v, &l) == nil && l.Template == template {
				doomed = append(doomed, append([]byte(nil), k...))
			}
			return nil
		})
		for _, k := range doomed {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
		return err
	})
}

// Pools returns every recorded pool.
func (s *Store) Pools() ([]Pool, error) {
	var out []Pool
	err := s.each(bucketPools, func(_, v []byte) error {
		var p Pool
		if err := json.Unmarshal(v, &p); err != nil {
			return err
		}
		out = append(out, p)
		return nil
	})
	return out, err
}

// PutLease records a lease (any JSON-encodable value with an id).
func (s *Store) PutLease(id string, l any) error { return s.put(bucketLeases, id, l) }

// DeleteLease forgets a lease.
func (s *Store) DeleteLease(id string) error { return s.del(bucketLeases, id) }

// LoseLease moves a lease to the lost records, in one transaction: rec (any
// JSON-encodable value with an "at" time) says why. A lost lease is never
// restored again.
func (s *Store) LoseLease(id string, rec any) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		if err := tx.Bucket(bucketLeases).Delete([]byte(id)); err != nil {
			return err
		}
		return tx.Bucket(bucketLost).Put([]byte(id), b)
	})
}

// Lost returns the lost record of lease id, if there is one.
func (s *Store) Lost(id string) ([]byte, bool) {
	var out []byte
	_ = s.db.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bucketLost).Get([]byte(id)); v != nil {
			out = append([]byte(nil), v...)
		}
		return nil
	})
	return out, out != nil
}

// pruneLost deletes lost records older than cut.
func pruneLost(b *bolt.Bucket, cut time.Time) error {
	var doomed [][]byte
	err := b.ForEach(func(k, v []byte) error {
		var r struct {
			At time.Time `json:"at"`
		}
		if json.Unmarshal(v, &r) != nil || r.At.Before(cut) {
			doomed = append(doomed, append([]byte(nil), k...))
		}
		return nil
	})
	for _, k := range doomed {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return err
}

// Leases decodes every recorded lease with decode.
func (s *Store) Leases(decode func(raw []byte) error) error {
	return s.each(bucketLeases, func(_, v []byte) error { return decode(v) })
}

// HasPools reports whether the state file in dir records pools, which a
// daemon that was killed left behind. It is false while a daemon holds the
// file (that daemon is alive) and when there is no file.
func HasPools(dir string) bool {
	path := filepath.Join(dir, FileName)
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 100 * time.Millisecond, ReadOnly: true})
	if err != nil {
		return false
	}
	defer db.Close()
	n := 0
	_ = db.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucketPools); b != nil {
			n = b.Stats().KeyN
		}
		return nil
	})
	return n > 0
}
