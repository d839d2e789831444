package wasm

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestGuestDeadlineCountsGuestTime checks the guest clock: paused time is
// not taken from the budget (bounded by what was measured outside the
// pauses, so the check holds on a loaded machine), pauses nest, the
// deadline fires when the budget is spent, and a done parent ends it.
func TestGuestDeadlineCountsGuestTime(t *testing.T) {
	const budget = time.Hour
	t0 := time.Now()
	g, cancel := withGuestDeadline(context.Background(), budget)
	defer cancel()
	resume := g.pause()
	ran := time.Since(t0) // at least the time the clock ran before the pause
	inner := g.pause()    // nested: still paused after inner resumes
	time.Sleep(100 * time.Millisecond)
	inner()
	time.Sleep(100 * time.Millisecond)
	t1 := time.Now()
	resume()
	again := g.pause()
	ran += time.Since(t1)
	g.mu.Lock()
	left := g.left
	g.mu.Unlock()
	again()
	if left < budget-ran {
		t.Errorf("left %v of %v after running at most %v: the 200 ms paused were counted", left, budget, ran)
	}
	if g.Err() != nil {
		t.Fatalf("done early: %v", g.Err())
	}

	short, cancelShort := withGuestDeadline(context.Background(), 10*time.Millisecond)
	defer cancelShort()
	select {
	case <-short.Done():
	case <-time.After(time.Minute):
		t.Fatal("a 10 ms budget did not end within a minute")
	}
	if !errors.Is(short.Err(), context.DeadlineExceeded) {
		t.Errorf("spent budget: err %v, want DeadlineExceeded", short.Err())
	}

	parent, stop := context.WithCancel(context.Background())
	child, cancelChild := withGuestDeadline(parent, budget)
	defer cancelChild()
	child.pause() // a paused clock still follows its parent
	stop()
	select {
	case <-child.Done():
	case <-time.After(time.Minute):
		t.Fatal("cancelling the parent did not end the call")
	}
	if !errors.Is(child.Err(), context.Canceled) {
		t.Errorf("cancelled parent: err %v, want Canceled", child.Err())
	}
	var none *guestDeadline
	none.pause()() // a call without a guest clock
}
