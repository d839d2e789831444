package wasm

import (
	"context"
	"sync"
	"time"
)

// guestDeadline is a context whose deadline counts the time guest code
// runs, not the time the host spends compiling a module the guest asked
// for: pause stops the clock, and the function it returns starts it again
// with what was left. A fixed wall-clock timeout around such a call fires
// on a loaded machine (compiling nested aggregators there took longer than
// the whole 5 s budget); compiling is host code, which cannot loop
// forever, so only guest time is bounded.
type guestDeadline struct {
	context.Context // the parent, for Value

	mu      sync.Mutex
	left    time.Duration // budget not yet used while paused
	started time.Time     // when the clock last started (running)
	timer   *time.Timer
	paused  int // nesting depth of pause
	done    chan struct{}
	err     error
	stop    func() bool // stops watching the parent
}

// withGuestDeadline returns a context that is done when the parent is, or
// when guest code has run for d; cancel releases it.
func withGuestDeadline(parent context.Context, d time.Duration) (*guestDeadline, context.CancelFunc) {
	g := &guestDeadline{Context: parent, left: d, done: make(chan struct{})}
	g.stop = context.AfterFunc(parent, func() { g.finish(parent.Err()) })
	g.mu.Lock()
	g.start()
	g.mu.Unlock()
	return g, func() {
		g.stop()
		g.finish(context.Canceled)
	}
}

// start runs the clock (g.mu held).
func (g *guestDeadline) start() {
	g.started = time.Now()
	g.timer = time.AfterFunc(g.left, func() { g.finish(context.DeadlineExceeded) })
}

// finish closes Done with err, once.
func (g *guestDeadline) finish(err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.err != nil {
		return
	}
	g.err = err
	if g.timer != nil {
		g.timer.Stop()
	}
	close(g.done)
}

// pause stops the clock until the returned function is called; pauses
// nest. On a nil receiver (a call without a guest deadline) it does
// nothing.
func (g *guestDeadline) pause() (resume func()) {
	if g == nil {
		return func() {}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.paused == 0 && g.err == nil && g.timer.Stop() {
		g.left -= time.Since(g.started)
	}
	g.paused++
	return func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.paused--
		if g.paused == 0 && g.err == nil {
			g.start()
		}
	}
}

// Deadline implements context.Context: the parent's (the guest's own
// moves while paused, so it is not a point in time).
func (g *guestDeadline) Deadline() (time.Time, bool) { return g.Context.Deadline() }

// Done implements context.Context.
func (g *guestDeadline) Done() <-chan struct{} { return g.done }

// Err implements context.Context.
func (g *guestDeadline) Err() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.err
}
