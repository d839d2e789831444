package train

import (
	"errors"
	"sync"
)

// A Rescue ends a run from another goroutine when the run's own goroutine
// cannot: under MPI a collective that waits on a rank that died, or hangs,
// never returns, and mpirun (or the communicator's watchdog) ends the
// process about a second later. End commits output.csv and output.log as
// the finished epochs left them and returns the result so far, so that the
// rank still prints its result line before it exits.
//
// The run holds the Rescue's lock while its observers see an epoch and
// while it ends, so End never interleaves with a row being written; once
// rescued, the run writes nothing more and returns ErrRescued.
type Rescue struct {
	mu      sync.Mutex
	early   func(status string) *Result // the result line before the first epoch
	loop    *loop                       // the run, between its outputs' opening and its end
	rescued bool                        // End ended the run
	over    bool                        // the run ended by itself
}

// ErrRescued is the error of a run that Rescue.End ended.
var ErrRescued = errors.New("train: the run was ended from outside while it waited (Rescue.End)")

// End ends the run with status (StatusInterrupted or StatusFailed): the
// end hooks of a stopped run run here (output.csv and output.log are
// committed, the timings filled in), the outputs' locks are released, and
// the result so far is returned.
// Before the first epoch (loading, a collective while the strategy sets
// up) it returns the result line of a run that trained no epoch. ok is
// false when there is nothing to end: the run has not checked its config
// yet, or has already ended and its own result stands.
func (r *Rescue) End(status string, cause error) (res *Result, ok bool) {
	if r == nil {
		return nil, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.rescued || r.over || r.early == nil {
		return nil, false
	}
	r.rescued = true
	l := r.loop
	if l == nil {
		return r.early(status), true
	}
	r.loop = nil
	_ = l.finish(endStopped, cause) // the outputs' errors: the process exits next, and the result line is what is left to say
	l.releaseAll()
	out := *l.res
	out.Status = status
	return &out, true
}

// begin arms the rescue once the run's config is checked: early builds
// the result line of a run that ends before its first epoch.
func (r *Rescue) begin(early func(status string) *Result) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.early = early
}

// close marks the run's end: a later End does nothing.
func (r *Rescue) close() {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.over, r.loop = true, nil
}

// attach gives the rescue the run once its outputs are open.
func (r *Rescue) attach(l *loop) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.loop = l
}

// hold runs f, the run's bookkeeping, under the rescue's lock, unless the
// run was rescued; last marks the run's end (a later End does nothing).
func (r *Rescue) hold(last bool, f func() error) error {
	if r == nil {
		return f()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.rescued {
		return ErrRescued
	}
	if last {
		r.over, r.loop = true, nil
	}
	return f()
}
