package agent

import (
	"strings"
	"time"
)

// deltaInterval is how long streamed text may wait before it becomes a
// message.delta event. A model streams a token at a time; one event (two
// writes and a notification) per token would dominate a run's database
// work, while a reader cannot tell 50 ms batches from a live stream.
const deltaInterval = 50 * time.Millisecond

// deltaBatcher coalesces streamed text into message.delta events. It is
// used from the single goroutine that reads the model's stream.
type deltaBatcher struct {
	flush   func(text string) error
	buf     strings.Builder
	last    time.Time
	err     error
	flushed bool
}

func (d *deltaBatcher) add(text string) {
	d.buf.WriteString(text)
	if !d.flushed || time.Since(d.last) >= deltaInterval {
		// The first piece goes out at once so a stream shows life early.
		d.send()
	}
}

func (d *deltaBatcher) send() {
	if d.buf.Len() == 0 || d.err != nil {
		return
	}
	d.err = d.flush(d.buf.String())
	d.buf.Reset()
	d.last, d.flushed = time.Now(), true
}

// done sends what is left and reports the first failed write (a fenced
// worker must stop).
func (d *deltaBatcher) done() error {
	d.send()
	return d.err
}
