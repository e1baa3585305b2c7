package sandbox

import "sync"

// lockTable serializes writes per (sandbox id, clean virtual path), so two
// tool calls appending to one file never interleave, while writes to
// different files proceed in parallel. Entries are reference counted and
// deleted when the last holder unlocks: the table holds only paths being
// written right now, however many files a thread ever touches.
type lockTable struct {
	mu sync.Mutex
	m  map[lockKey]*lockEntry
}

type lockKey struct{ id, path string }

type lockEntry struct {
	mu   sync.Mutex
	refs int // holders and waiters; guarded by lockTable.mu
}

// lock blocks until the caller holds (id, path) and returns the unlock.
func (t *lockTable) lock(id, path string) (unlock func()) {
	k := lockKey{id, path}
	t.mu.Lock()
	if t.m == nil {
		t.m = make(map[lockKey]*lockEntry)
	}
	e := t.m[k]
	if e == nil {
		e = &lockEntry{}
		t.m[k] = e
	}
	e.refs++
	t.mu.Unlock()

	e.mu.Lock()
	return func() {
		e.mu.Unlock()
		t.mu.Lock()
		e.refs--
		if e.refs == 0 {
			delete(t.m, k)
		}
		t.mu.Unlock()
	}
}

// size is the number of live entries (for tests).
func (t *lockTable) size() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m)
}
