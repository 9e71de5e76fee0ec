package bench

import (
	"testing"
	"time"
)

// TestCollectorDrainsThreadBuffers checks that events waiting in the threads'
// buffers (fewer than a batch, or the rest of one) are in the interval they
// completed in when it is flushed, and in the result; and that the window
// still excludes what completed before it opened or after it closed.
func TestCollectorDrainsThreadBuffers(t *testing.T) {
	o := DefaultOptions()
	o.Threads = 2
	c := newCollector(&o)
	t0 := time.Now()
	one := counts{reads: 1}
	c.event(t0.Add(-time.Millisecond), 10*time.Microsecond, 0, one) // warm-up
	c.begin(t0)
	n0 := eventBatch + 44 // a batch recorded by the thread, 44 left in its buffer
	for i := range n0 {
		c.event(t0.Add(time.Duration(i+1)*time.Millisecond), 100*time.Microsecond, 0, one)
	}
	for i := range 3 {
		c.event(t0.Add(time.Duration(i+1)*time.Millisecond), 5*time.Millisecond, 1, one)
	}
	ivs := c.flush(t0.Add(time.Second + flushLag))
	if len(ivs) != 1 {
		t.Fatalf("flush after 1s closed %d intervals, want 1", len(ivs))
	}
	if want := float64(n0 + 3); ivs[0].TPS != want {
		t.Errorf("first second: %.0f tps, want %.0f (buffered events left out?)", ivs[0].TPS, want)
	}
	if ivs[0].P95 != 100*time.Microsecond {
		t.Errorf("first second p95 %v, want 100µs", ivs[0].P95)
	}
	c.event(t0.Add(1500*time.Millisecond), 7*time.Millisecond, 1, one)
	c.finish(t0.Add(2 * time.Second))
	c.event(t0.Add(2*time.Second+time.Millisecond), time.Millisecond, 1, one) // after the window
	r := c.result()
	if r.Events != int64(n0+4) {
		t.Errorf("result has %d events, want %d", r.Events, n0+4)
	}
	if r.ThreadEvents[0] != int64(n0) || r.ThreadEvents[1] != 4 {
		t.Errorf("events per thread %v, want [%d 4]", r.ThreadEvents, n0)
	}
	if r.LatencyMax != 7*time.Millisecond || r.LatencyMin != 100*time.Microsecond {
		t.Errorf("latency min %v max %v, want 100µs and 7ms", r.LatencyMin, r.LatencyMax)
	}
	if len(r.Intervals) != 2 || r.Intervals[1].TPS != 1 {
		t.Errorf("intervals %+v, want 2 with 1 event in the second", r.Intervals)
	}
}

// TestCollectorFinishExcludesLaterEvents: when the window closes, a thread's
// buffer may already hold its last event, completed after the end; finish must
// leave it out (it did not, when it drained the buffers before setting the end).
func TestCollectorFinishExcludesLaterEvents(t *testing.T) {
	o := DefaultOptions()
	o.Threads = 2
	c := newCollector(&o)
	t0 := time.Now()
	c.begin(t0)
	one := counts{reads: 1}
	c.event(t0.Add(500*time.Millisecond), time.Millisecond, 0, one)
	c.event(t0.Add(time.Second+time.Millisecond), time.Millisecond, 0, one) // after the end
	c.event(t0.Add(time.Second+2*time.Millisecond), time.Millisecond, 1, one)
	c.finish(t0.Add(time.Second))
	r := c.result()
	if r.Events != 1 || r.ThreadEvents[0] != 1 || r.ThreadEvents[1] != 0 {
		t.Errorf("%d events (per thread %v), want 1 ([1 0]): events after the window's end were counted", r.Events, r.ThreadEvents)
	}
}
