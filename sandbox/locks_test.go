package sandbox

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLockTableSerializesAndDoesNotLeak(t *testing.T) {
	t.Parallel()
	var lt lockTable
	counters := make([]int, 8) // unsynchronized on purpose: the lock guards them
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 200 {
				p := j % len(counters)
				unlock := lt.lock("box", fmt.Sprintf("/mnt/user-data/workspace/%d", p))
				counters[p]++
				unlock()
				_ = i
			}
		}()
	}
	wg.Wait()
	for _, c := range counters {
		require.Equal(t, 64*200/len(counters), c)
	}
	require.Zero(t, lt.size(), "lock entries must be deleted when unused")
}
