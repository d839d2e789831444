// Package comm is the contract of the communicator that multi-process
// training runs over: a fixed group of ranks that exchange bytes with
// all-to-all-v, broadcast and barrier, plus the deterministic all-reduce
// built on them. The single-process communicator (Single) serves when strata
// runs alone; NewLocal gives N in-process ranks (goroutines) for tests; the
// Open MPI communicator is the module comm.mpi (package plugins/mpi, build
// tag mpi), which strata opens when it finds itself started by mpirun.
//
// Every collective must be called by every rank of the group in the same
// order (as in MPI). Bytes a rank sends to other ranks are counted per
// purpose ("gradients", "features", "topology", ...); bytes a rank "sends"
// to itself are not.
package comm

import (
	"context"
	"fmt"
	"maps"
	"sync"

	"strata/core/registry"
)

// Comm is a group of ranks.
type Comm interface {
	// Rank is this process's index in the group, in [0, Size()).
	Rank() int
	// Size is the number of ranks.
	Size() int
	// AllToAllV sends send[j] to rank j (len(send) == Size()) and returns
	// recv, where recv[j] is what rank j sent to this rank. purpose labels
	// the bytes for Sent.
	AllToAllV(ctx context.Context, purpose string, send [][]byte) ([][]byte, error)
	// Broadcast copies root's buf into buf on every rank; buf has the same
	// length on every rank.
	Broadcast(ctx context.Context, purpose string, root int, buf []byte) error
	// Barrier returns when every rank has entered it.
	Barrier(ctx context.Context) error
	// Sent returns the bytes this rank sent to other ranks, per purpose.
	Sent() map[string]int64
	// Close leaves the group (MPI_Finalize for MPI).
	Close() error
}

// Aborter is implemented by communicators that can end every rank of the
// group at once (MPI_Abort): a rank that fails while the others wait in a
// collective must not leave them waiting.
type Aborter interface {
	Abort(code int)
}

// Watched is implemented by communicators whose collectives can wait
// forever on a rank that died or hangs (comm.mpi): OnStall registers f,
// which the communicator's watchdog calls, once, with the collective's
// name once it has waited past the communicator's timeout. f ends the
// process (it commits what it can, then aborts the group); without f the
// communicator aborts the group itself.
type Watched interface {
	OnStall(f func(what string))
}

// Opener is a communicator module: the namespace "comm" of the registry
// (comm.mpi). Open joins the group the process was started in.
type Opener interface {
	registry.Module
	Open(ctx context.Context) (Comm, error)
}

// Distributed is implemented by strategies that split their work over the
// ranks of a communicator; strata refuses to run any other strategy on
// more than one rank (every rank would train the whole model alone).
type Distributed interface {
	Distributed()
}

// Counter counts sent bytes per purpose; communicators embed it.
type Counter struct {
	mu   sync.Mutex
	sent map[string]int64
}

// Add counts n bytes sent for purpose.
func (c *Counter) Add(purpose string, n int64) {
	if n == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sent == nil {
		c.sent = map[string]int64{}
	}
	c.sent[purpose] += n
}

// Sent returns a copy of the counts.
func (c *Counter) Sent() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.sent)
}

// Total returns the bytes of every purpose of sent together.
func Total(sent map[string]int64) int64 {
	t := int64(0)
	for _, v := range sent {
		t += v
	}
	return t
}

// CheckSend checks that send has one entry per rank.
func CheckSend(c Comm, send [][]byte) error {
	if len(send) != c.Size() {
		return fmt.Errorf("comm: all-to-all-v with %d buffers on %d ranks", len(send), c.Size())
	}
	return nil
}

type ctxKey struct{}

// With returns a context that carries c: the training strategies that
// distribute take their communicator from it.
func With(ctx context.Context, c Comm) context.Context {
	return context.WithValue(ctx, ctxKey{}, c)
}

// From returns the communicator ctx carries, or a single-process one.
func From(ctx context.Context) Comm {
	if c, ok := ctx.Value(ctxKey{}).(Comm); ok {
		return c
	}
	return NewSingle()
}
