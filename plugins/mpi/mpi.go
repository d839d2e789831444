//go:build mpi

// Package mpi is the communicator comm.mpi: Open MPI (libmpi) through cgo.
// strata opens it when it runs under mpirun; every collective is one MPI
// call on MPI_COMM_WORLD with MPI_BYTE buffers.
//
// A rank that dies mid-collective leaves the others blocked inside MPI:
// mpirun normally kills them, and as a second line every collective runs
// under a watchdog that ends the process with a message naming the
// collective once it has waited STRATA_MPI_TIMEOUT (default 10m), after
// the handler registered with OnStall (comm.Watched) has committed what
// the run can keep.
package mpi

/*
#cgo pkg-config: ompi-c
#include <mpi.h>
#include <stdlib.h>

static int strata_init(int *rank, int *size, int *provided) {
	int inited = 0;
	MPI_Initialized(&inited);
	if (!inited) {
		int rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, provided);
		if (rc != MPI_SUCCESS) return rc;
	} else {
		MPI_Query_thread(provided);
	}
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	MPI_Comm_rank(MPI_COMM_WORLD, rank);
	return MPI_Comm_size(MPI_COMM_WORLD, size);
}

static int strata_alltoallv(void *send, int *scount, int *sdispl, void *recv, int *rcount, int *rdispl) {
	return MPI_Alltoallv(send, scount, sdispl, MPI_BYTE, recv, rcount, rdispl, MPI_BYTE, MPI_COMM_WORLD);
}

static int strata_alltoall_int(int *send, int *recv) {
	return MPI_Alltoall(send, 1, MPI_INT, recv, 1, MPI_INT, MPI_COMM_WORLD);
}

static int strata_bcast(void *buf, int n, int root) {
	return MPI_Bcast(buf, n, MPI_BYTE, root, MPI_COMM_WORLD);
}

static int strata_barrier(void) { return MPI_Barrier(MPI_COMM_WORLD); }

static int strata_finalize(void) { return MPI_Finalize(); }

static void strata_abort(int code) { MPI_Abort(MPI_COMM_WORLD, code); }

static int strata_error_string(int code, char *buf) {
	int n = 0;
	MPI_Error_string(code, buf, &n);
	return n;
}
*/
import "C"

import (
	"context"
	"fmt"
	"math"
	"os"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"strata/core/comm"
	"strata/core/registry"
)

// Module is comm.mpi.
type Module struct{}

var _ comm.Opener = (*Module)(nil)

// StrataModule implements registry.Module.
func (*Module) StrataModule() registry.ModuleInfo {
	return registry.ModuleInfo{ID: "comm.mpi", New: func() registry.Module { return new(Module) },
		Doc: "Open MPI (MPI_COMM_WORLD) through cgo: the ranks mpirun started (docs/distributed.md)"}
}

// Open implements comm.Opener: MPI_Init_thread (serialized) on first use.
func (*Module) Open(context.Context) (comm.Comm, error) {
	var rank, size, provided C.int
	if rc := C.strata_init(&rank, &size, &provided); rc != C.MPI_SUCCESS {
		return nil, fmt.Errorf("MPI_Init_thread: %s", errString(rc))
	}
	if provided < C.MPI_THREAD_SERIALIZED {
		return nil, fmt.Errorf("MPI_Init_thread: the MPI library offers thread level %d, strata needs MPI_THREAD_SERIALIZED (calls from any one thread at a time)", int(provided))
	}
	timeout := 10 * time.Minute
	if s := os.Getenv("STRATA_MPI_TIMEOUT"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("STRATA_MPI_TIMEOUT=%q: want a positive duration such as 10m or 30s", s)
		}
		timeout = d
	}
	return &Comm{rank: int(rank), size: int(size), timeout: timeout}, nil
}

// Comm is MPI_COMM_WORLD.
type Comm struct {
	comm.Counter
	mu         sync.Mutex // MPI_THREAD_SERIALIZED: one call at a time
	rank, size int
	timeout    time.Duration
	closed     bool
	stall      atomic.Pointer[func(what string)] // OnStall's handler
	stallOnce  sync.Once
}

var (
	_ comm.Comm    = (*Comm)(nil)
	_ comm.Aborter = (*Comm)(nil)
	_ comm.Watched = (*Comm)(nil)
)

// OnStall implements comm.Watched.
func (c *Comm) OnStall(f func(what string)) { c.stall.Store(&f) }

// stalled ends the process after a collective waited past the timeout:
// the handler first (it commits what it can and aborts), then MPI_Abort.
func (c *Comm) stalled(what string) {
	fmt.Fprintf(os.Stderr, "strata: rank %d of %d: %s has waited %s for the other ranks; one of them has probably died (see the messages above): aborting the job (STRATA_MPI_TIMEOUT sets the wait)\n",
		c.rank, c.size, what, c.timeout)
	c.stallOnce.Do(func() {
		if f := c.stall.Load(); f != nil {
			(*f)(what)
		}
	})
	C.strata_abort(3)
	os.Exit(3)
}

// Rank implements comm.Comm.
func (c *Comm) Rank() int { return c.rank }

// Size implements comm.Comm.
func (c *Comm) Size() int { return c.size }

func errString(rc C.int) string {
	buf := (*C.char)(C.malloc(C.MPI_MAX_ERROR_STRING))
	defer C.free(unsafe.Pointer(buf))
	n := C.strata_error_string(rc, buf)
	return fmt.Sprintf("%s (MPI error %d)", C.GoStringN(buf, n), int(rc))
}

// call runs one collective under the lock and the watchdog.
func (c *Comm) call(ctx context.Context, what string, f func() C.int) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return fmt.Errorf("comm.mpi: %s after Close", what)
	}
	dog := time.AfterFunc(c.timeout, func() { c.stalled(what) })
	defer dog.Stop()
	if rc := f(); rc != C.MPI_SUCCESS {
		return fmt.Errorf("comm.mpi: rank %d: %s: %s", c.rank, what, errString(rc))
	}
	return nil
}

// AllToAllV implements comm.Comm: the counts travel first (MPI_Alltoall),
// then the bytes (MPI_Alltoallv).
func (c *Comm) AllToAllV(ctx context.Context, purpose string, send [][]byte) ([][]byte, error) {
	if err := comm.CheckSend(c, send); err != nil {
		return nil, err
	}
	n := c.size
	scount := make([]C.int, n)
	sdispl := make([]C.int, n)
	total := 0
	for j, b := range send {
		if total+len(b) > math.MaxInt32 {
			return nil, fmt.Errorf("comm.mpi: all-to-all-v (%s) sends more than 2 GiB from rank %d: send in smaller pieces", purpose, c.rank)
		}
		scount[j], sdispl[j] = C.int(len(b)), C.int(total)
		total += len(b)
	}
	rcount := make([]C.int, n)
	// C memory: cgo forbids passing Go memory that holds Go pointers, and
	// these buffers are large; one copy each way.
	cs := C.malloc(C.size_t(n) * C.size_t(unsafe.Sizeof(C.int(0))) * 4)
	defer C.free(cs)
	ints := unsafe.Slice((*C.int)(cs), 4*n)
	copy(ints, scount)
	if err := c.call(ctx, "MPI_Alltoall ("+purpose+" counts)", func() C.int {
		return C.strata_alltoall_int(&ints[0], &ints[n])
	}); err != nil {
		return nil, err
	}
	copy(rcount, ints[n:2*n])
	rtotal := 0
	for j := range rcount {
		ints[2*n+j] = C.int(rtotal)
		rtotal += int(rcount[j])
		if rtotal > math.MaxInt32 {
			return nil, fmt.Errorf("comm.mpi: all-to-all-v (%s) receives more than 2 GiB on rank %d: send in smaller pieces", purpose, c.rank)
		}
	}
	copy(ints[3*n:], sdispl)
	sbuf := C.malloc(C.size_t(max(total, 1)))
	defer C.free(sbuf)
	sb := unsafe.Slice((*byte)(sbuf), max(total, 1))
	for j, b := range send {
		copy(sb[sdispl[j]:], b)
	}
	rbuf := C.malloc(C.size_t(max(rtotal, 1)))
	defer C.free(rbuf)
	if err := c.call(ctx, "MPI_Alltoallv ("+purpose+")", func() C.int {
		return C.strata_alltoallv(sbuf, &ints[0], &ints[3*n], rbuf, &ints[n], &ints[2*n])
	}); err != nil {
		return nil, err
	}
	rb := unsafe.Slice((*byte)(rbuf), max(rtotal, 1))
	recv := make([][]byte, n)
	for j := range recv {
		off := int(ints[2*n+j])
		recv[j] = append([]byte(nil), rb[off:off+int(rcount[j])]...)
		if j != c.rank {
			c.Add(purpose, int64(len(send[j])))
		}
	}
	return recv, nil
}

// Broadcast implements comm.Comm.
func (c *Comm) Broadcast(ctx context.Context, purpose string, root int, buf []byte) error {
	if root < 0 || root >= c.size {
		return fmt.Errorf("comm.mpi: broadcast from rank %d of %d", root, c.size)
	}
	if len(buf) > math.MaxInt32 {
		return fmt.Errorf("comm.mpi: broadcast (%s) of more than 2 GiB: send in smaller pieces", purpose)
	}
	p := C.malloc(C.size_t(max(len(buf), 1)))
	defer C.free(p)
	cb := unsafe.Slice((*byte)(p), max(len(buf), 1))
	copy(cb, buf)
	if err := c.call(ctx, "MPI_Bcast ("+purpose+")", func() C.int { return C.strata_bcast(p, C.int(len(buf)), C.int(root)) }); err != nil {
		return err
	}
	copy(buf, cb)
	if c.rank == root {
		c.Add(purpose, int64(len(buf))*int64(c.size-1))
	}
	return nil
}

// Barrier implements comm.Comm.
func (c *Comm) Barrier(ctx context.Context) error {
	return c.call(ctx, "MPI_Barrier", func() C.int { return C.strata_barrier() })
}

// Abort implements comm.Aborter: MPI_Abort on MPI_COMM_WORLD (mpirun ends
// every rank), then exit.
func (c *Comm) Abort(code int) {
	C.strata_abort(C.int(code))
	os.Exit(code)
}

// Close implements comm.Comm: MPI_Finalize (after a barrier inside it).
func (c *Comm) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	if rc := C.strata_finalize(); rc != C.MPI_SUCCESS {
		return fmt.Errorf("MPI_Finalize: %s", errString(rc))
	}
	return nil
}

func init() { registry.Register(new(Module)) }
