package oci

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry/remote"
)

// A lease is a lock kept in a registry as a small manifest under a tag
// (NAME-HASH32.lock) whose annotations name the holder and when its lease
// ends. Registries have no compare-and-swap on tags, so taking it is: read;
// if absent, released or stale, write ours; wait Settle; read again, and
// hold it only if ours is still there (the last writer wins, and every
// contender reads the same winner once their writes have landed).
//
// Guarantees: with runners whose requests to the registry each take less
// than Settle, one of several runners that start together holds the lease.
// It is not a mutual exclusion proof: a runner stalled between its read and
// its write for longer than Settle can take a lease another holds, and
// then both build. That costs one extra build and nothing else: the content
// tag is only ever written by one manifest PUT of a complete upload, and
// both uploads are the same template under the same content key.
//
// A holder renews its lease every TTL/3 (a new manifest, so a new digest).
// A waiter treats a lease as stale when its digest has not changed for TTL
// of the waiter's own clock, or when its end time passed more than TTL ago
// by the waiter's clock; so a killed holder delays others by about TTL, and
// clock skew under TTL does no harm.
type lease struct {
	repo   *remote.Repository
	tag    string
	holder string
	ttl    time.Duration
	settle time.Duration

	mu   sync.Mutex
	seen map[string]time.Time // lock manifest digest -> when this process first saw it
}

// lockState is what a lock manifest says.
type lockState struct {
	Holder   string
	Expires  time.Time
	Released bool
	Digest   string
}

const (
	annLockHolder  = "org.pristinedb.lock.holder"
	annLockExpires = "org.pristinedb.lock.expires"
	annLockState   = "org.pristinedb.lock.state"
	annLockWritten = "org.pristinedb.lock.written"
)

func newLease(ctx context.Context, repo *remote.Repository, tag string, ttl, settle time.Duration) (*lease, error) {
	host, _ := os.Hostname()
	l := &lease{repo: repo, tag: tag, ttl: ttl, settle: settle, seen: map[string]time.Time{},
		holder: fmt.Sprintf("%s/%d/%s", host, os.Getpid(), rand.Text()[:8])}
	if err := pushBlobBytes(ctx, repo, ocispec.DescriptorEmptyJSON, ocispec.DescriptorEmptyJSON.Data); err != nil {
		return nil, err
	}
	return l, nil
}

// read returns the lock's state, nil when there is none.
func (l *lease) read(ctx context.Context) (*lockState, error) {
	desc, rc, err := l.repo.FetchReference(ctx, l.tag)
	if err != nil {
		if notFound(err) {
			return nil, nil
		}
		return nil, err
	}
	defer rc.Close()
	if desc.Size > maxManifest {
		return nil, fmt.Errorf("lock %s: manifest too large", l.tag)
	}
	b, err := content.ReadAll(rc, desc)
	if err != nil {
		return nil, err
	}
	var man ocispec.Manifest
	if err := json.Unmarshal(b, &man); err != nil {
		return nil, fmt.Errorf("lock %s: %w", l.tag, err)
	}
	st := &lockState{Holder: man.Annotations[annLockHolder], Released: man.Annotations[annLockState] != "held",
		Digest: desc.Digest.String()}
	st.Expires, _ = time.Parse(time.RFC3339Nano, man.Annotations[annLockExpires])
	l.mu.Lock()
	if _, ok := l.seen[st.Digest]; !ok {
		l.seen[st.Digest] = time.Now()
	}
	l.mu.Unlock()
	return st, nil
}

// live reports whether a lock someone holds is still being renewed.
func (l *lease) live(st *lockState) bool {
	if st == nil || st.Released {
		return false
	}
	l.mu.Lock()
	first := l.seen[st.Digest]
	l.mu.Unlock()
	now := time.Now()
	return now.Sub(first) < l.ttl && now.Before(st.Expires.Add(l.ttl))
}

// write replaces the lock manifest: held by us until now+TTL, or released.
func (l *lease) write(ctx context.Context, held bool) error {
	state := "released"
	if held {
		state = "held"
	}
	now := time.Now().UTC()
	man := ocispec.Manifest{
		Versioned:    specs.Versioned{SchemaVersion: 2},
		MediaType:    ocispec.MediaTypeImageManifest,
		ArtifactType: LockArtifactType,
		Config:       ocispec.DescriptorEmptyJSON,
		Layers:       []ocispec.Descriptor{ocispec.DescriptorEmptyJSON},
		Annotations: map[string]string{
			annLockHolder:  l.holder,
			annLockExpires: now.Add(l.ttl).Format(time.RFC3339Nano),
			annLockState:   state,
			annLockWritten: strconv.FormatInt(now.UnixNano(), 10),
		},
	}
	b, err := json.Marshal(man)
	if err != nil {
		return err
	}
	desc := content.NewDescriptorFromBytes(ocispec.MediaTypeImageManifest, b)
	for try := 0; ; try++ {
		err = l.repo.PushReference(ctx, desc, bytesReader(b), l.tag)
		if err == nil || try == 2 {
			return err
		}
		// distribution 2.8 can lose the empty blob when two runners upload
		// it at the same instant ("manifest blob unknown"): upload it again.
		_ = l.repo.Push(ctx, ocispec.DescriptorEmptyJSON, bytesReader(ocispec.DescriptorEmptyJSON.Data))
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
}

// acquire tries once to take the lease. It returns false and the current
// state when someone else holds it.
func (l *lease) acquire(ctx context.Context) (bool, *lockState, error) {
	cur, err := l.read(ctx)
	if err != nil {
		return false, nil, err
	}
	if l.live(cur) && cur.Holder != l.holder {
		return false, cur, nil
	}
	if err := l.write(ctx, true); err != nil {
		return false, nil, err
	}
	if err := sleep(ctx, l.settle); err != nil {
		return false, nil, err
	}
	cur, err = l.read(ctx)
	if err != nil {
		return false, nil, err
	}
	if cur != nil && cur.Holder == l.holder && !cur.Released {
		return true, cur, nil
	}
	return false, cur, nil
}

// keep renews the lease every TTL/3 until stop is called.
func (l *lease) keep(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for sleep(ctx, l.ttl/3) == nil {
			_ = l.write(ctx, true) // a missed renewal only risks a second build
		}
	}()
	return func() { cancel(); <-done }
}

// release marks the lease released (registries need not allow deletes).
func (l *lease) release(ctx context.Context) error {
	return l.write(context.WithoutCancel(ctx), false)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
