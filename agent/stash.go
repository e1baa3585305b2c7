package agent

import (
	"sync"
	"time"

	"github.com/google/uuid"
)

// stash keeps request-scoped secrets in memory only, from run creation until
// the worker in this process picks them up. They are never written to the
// database or the job queue; a worker in another process that needs them
// fails the run with a clear error instead of running without them.
type stash struct {
	mu sync.Mutex
	m  map[uuid.UUID]stashed
}

type stashed struct {
	values  map[string]string
	expires time.Time
}

const stashTTL = time.Hour

func (s *stash) put(run uuid.UUID, values map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[uuid.UUID]stashed{}
	}
	now := time.Now()
	for id, v := range s.m { // sweep so abandoned entries cannot pile up
		if now.After(v.expires) {
			delete(s.m, id)
		}
	}
	s.m[run] = stashed{values: values, expires: now.Add(stashTTL)}
}

// get returns the run's secrets without forgetting them (a resumed run in
// this process needs them again).
func (s *stash) get(run uuid.UUID) (map[string]string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[run]
	return v.values, ok && time.Now().Before(v.expires)
}

// drop forgets the run's secrets once it has ended.
func (s *stash) drop(run uuid.UUID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, run)
}
