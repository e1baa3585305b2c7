package sandbox

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"
)

// box is a provider's in-memory record of one sandbox. Which sandbox a
// thread has is durable elsewhere (the Manager's table); this is what the
// provider needs to drive it on this host.
type box struct {
	id   string
	tree ThreadTree

	// ctx is cancelled by Destroy and ends every in-flight command.
	ctx    context.Context
	cancel context.CancelFunc
	execs  sync.WaitGroup

	// guarded by registry.mu
	idle     bool
	running  int // in-flight commands; an idle box running one is not evicted
	lastUsed time.Time
	// extra is provider state (the bwrap provider's cgroup).
	extra any
}

// registry holds a provider's live sandboxes by id.
type registry struct {
	mu sync.Mutex
	m  map[string]*box
}

// acquire returns the live box with id, creating it with create when
// missing, and marks it in use. created reports whether it is new.
func (r *registry) acquire(id string, tenantID, threadID uuid.UUID, create func() (*box, error)) (b *box, created bool, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if b = r.m[id]; b != nil {
		if b.tree.TenantID != tenantID || b.tree.ThreadID != threadID {
			return nil, false, fmt.Errorf("sandbox %s belongs to another thread: %w", id, ErrLeaseConflict)
		}
		b.idle, b.lastUsed = false, time.Now()
		return b, false, nil
	}
	if b, err = create(); err != nil {
		return nil, false, err
	}
	b.id, b.lastUsed = id, time.Now()
	b.ctx, b.cancel = context.WithCancel(context.Background())
	if r.m == nil {
		r.m = make(map[string]*box)
	}
	r.m[id] = b
	return b, true, nil
}

func (r *registry) get(id string) (*box, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.m[id]
	if b == nil {
		return nil, fmt.Errorf("sandbox %s: %w", id, ErrNotFound)
	}
	return b, nil
}

// begin registers an in-flight command on box id and returns a context
// that ends when either ctx or the box ends; done must be called.
func (r *registry) begin(ctx context.Context, id string) (*box, context.Context, func(), error) {
	r.mu.Lock()
	b := r.m[id]
	if b == nil {
		r.mu.Unlock()
		return nil, nil, nil, fmt.Errorf("sandbox %s: %w", id, ErrNotFound)
	}
	b.execs.Add(1)
	b.running++
	b.lastUsed = time.Now()
	r.mu.Unlock()
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(b.ctx, cancel)
	return b, ctx, func() {
		stop()
		cancel()
		r.mu.Lock()
		b.running--
		b.lastUsed = time.Now()
		r.mu.Unlock()
		b.execs.Done()
	}, nil
}

// release marks box id idle and returns the idle boxes beyond keep, least
// recently used first, removed from the registry for the caller to tear
// down.
func (r *registry) release(id string, keep int) ([]*box, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.m[id]
	if b == nil {
		return nil, fmt.Errorf("sandbox %s: %w", id, ErrNotFound)
	}
	b.idle, b.lastUsed = true, time.Now()
	if keep < 0 {
		return nil, nil
	}
	var idle []*box
	for _, x := range r.m {
		if x.idle && x.running == 0 {
			idle = append(idle, x)
		}
	}
	if len(idle) <= keep {
		return nil, nil
	}
	slices.SortFunc(idle, func(a, b *box) int { return a.lastUsed.Compare(b.lastUsed) })
	evict := idle[:len(idle)-keep]
	for _, x := range evict {
		delete(r.m, x.id)
	}
	return evict, nil
}

// remove forgets box id and returns it for teardown.
func (r *registry) remove(id string) (*box, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.m[id]
	if b == nil {
		return nil, fmt.Errorf("sandbox %s: %w", id, ErrNotFound)
	}
	delete(r.m, id)
	return b, nil
}

// all removes and returns every box (shutdown).
func (r *registry) all() []*box {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*box, 0, len(r.m))
	for id, b := range r.m {
		out = append(out, b)
		delete(r.m, id)
	}
	return out
}

// stop ends the box's commands and waits for them to exit.
func (b *box) stop() {
	b.cancel()
	b.execs.Wait()
}
