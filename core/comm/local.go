package comm

import (
	"context"
	"fmt"
	"slices"
	"sync"
)

// Local is one rank of an in-process group whose ranks are goroutines of
// one process: multi-rank training tested without MPI. NewLocal makes the
// group.
type Local struct {
	Counter
	rank int
	hub  *hub
	seq  uint64 // this rank's collectives so far
}

var _ Comm = (*Local)(nil)

// hub is the meeting point of a group's ranks: one round per collective.
type hub struct {
	size   int
	mu     sync.Mutex
	rounds map[uint64]*round
}

type round struct {
	data    []any
	arrived int
	left    int
	done    chan struct{}
}

// NewLocal returns the n ranks of a new in-process group.
func NewLocal(n int) []*Local {
	if n < 1 {
		panic(fmt.Sprintf("comm: NewLocal(%d)", n))
	}
	h := &hub{size: n, rounds: map[uint64]*round{}}
	out := make([]*Local, n)
	for r := range out {
		out[r] = &Local{rank: r, hub: h}
	}
	return out
}

// NewSingle returns the communicator of a process that runs alone.
func NewSingle() Comm { return NewLocal(1)[0] }

// Rank implements Comm.
func (l *Local) Rank() int { return l.rank }

// Size implements Comm.
func (l *Local) Size() int { return l.hub.size }

// exchange deposits v for this rank's next collective and returns every
// rank's deposit once all have arrived.
func (l *Local) exchange(ctx context.Context, v any) ([]any, error) {
	h := l.hub
	seq := l.seq
	l.seq++
	h.mu.Lock()
	r := h.rounds[seq]
	if r == nil {
		r = &round{data: make([]any, h.size), done: make(chan struct{})}
		h.rounds[seq] = r
	}
	r.data[l.rank] = v
	r.arrived++
	if r.arrived == h.size {
		close(r.done)
	}
	h.mu.Unlock()
	select {
	case <-r.done:
	case <-ctx.Done():
		return nil, fmt.Errorf("comm: rank %d waiting for the other ranks: %w", l.rank, ctx.Err())
	}
	h.mu.Lock()
	r.left++
	if r.left == h.size {
		delete(h.rounds, seq)
	}
	h.mu.Unlock()
	return r.data, nil
}

// AllToAllV implements Comm.
func (l *Local) AllToAllV(ctx context.Context, purpose string, send [][]byte) ([][]byte, error) {
	if err := CheckSend(l, send); err != nil {
		return nil, err
	}
	mine := make([][]byte, len(send))
	for j, b := range send {
		mine[j] = slices.Clone(b) // the sender may reuse its buffers
		if j != l.rank {
			l.Add(purpose, int64(len(b)))
		}
	}
	all, err := l.exchange(ctx, mine)
	if err != nil {
		return nil, err
	}
	recv := make([][]byte, len(all))
	for j, v := range all {
		recv[j] = v.([][]byte)[l.rank]
	}
	return recv, nil
}

// Broadcast implements Comm.
func (l *Local) Broadcast(ctx context.Context, purpose string, root int, buf []byte) error {
	if root < 0 || root >= l.Size() {
		return fmt.Errorf("comm: broadcast from rank %d of %d", root, l.Size())
	}
	var v any
	if l.rank == root {
		v = slices.Clone(buf)
		l.Add(purpose, int64(len(buf))*int64(l.Size()-1))
	}
	all, err := l.exchange(ctx, v)
	if err != nil {
		return err
	}
	src := all[root].([]byte)
	if len(src) != len(buf) {
		return fmt.Errorf("comm: broadcast of %d bytes from rank %d into %d bytes on rank %d", len(src), root, len(buf), l.rank)
	}
	copy(buf, src)
	return nil
}

// Barrier implements Comm.
func (l *Local) Barrier(ctx context.Context) error {
	_, err := l.exchange(ctx, nil)
	return err
}

// Close implements Comm.
func (l *Local) Close() error { return nil }
