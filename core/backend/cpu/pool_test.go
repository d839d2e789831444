package cpu

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"strata/core/backend"
	"strata/core/tensor"
)

// stepShapes is a step program's buffers in miniature, every storage kind
// at least recycledMin bytes, and one below it (a Go slice).
var stepShapes = []struct {
	dt    tensor.DType
	shape []int
}{
	{tensor.Float32, []int{1200, 64}},
	{tensor.Float32, []int{4800, 64}},
	{tensor.Float64, []int{5000, 7}},
	{tensor.Int32, []int{70_000}},
	{tensor.Int64, []int{33_000}},
	{tensor.Float16, []int{2000, 70}},
	{tensor.BFloat16, []int{140_000}},
	{tensor.Float32, []int{100, 5}},
}

// allocStep allocates stepShapes (rows scaled by grow percent) with
// AllocRecycled and fills every buffer with a non-zero pattern, as a
// step's kernels would.
func allocStep(t testing.TB, be *Backend, grow int) []*tensor.Tensor {
	t.Helper()
	var out []*tensor.Tensor
	for _, s := range stepShapes {
		shape := append([]int(nil), s.shape...)
		shape[0] = shape[0] * (100 + grow) / 100
		x, err := be.AllocRecycled(s.dt, shape, tensor.Host)
		if err != nil {
			t.Fatal(err)
		}
		dirty(x)
		out = append(out, x)
	}
	return out
}

// dirty writes non-zero values into every element of x.
func dirty(x *tensor.Tensor) {
	bf := hostBuf(x)
	for i := range bf.f32 {
		bf.f32[i] = 1.5
	}
	for i := range bf.f64 {
		bf.f64[i] = -2
	}
	for i := range bf.i32 {
		bf.i32[i] = 7
	}
	for i := range bf.i64 {
		bf.i64[i] = 9
	}
	for i := range bf.u16 {
		bf.u16[i] = 0x3c00
	}
}

// nonZero returns the index of x's first non-zero element, or -1.
func nonZero(x *tensor.Tensor) int {
	bf := hostBuf(x)
	first := func(n int, zero func(int) bool) int {
		for i := range n {
			if !zero(i) {
				return i
			}
		}
		return -1
	}
	for _, i := range []int{
		first(len(bf.f32), func(i int) bool { return bf.f32[i] == 0 }),
		first(len(bf.f64), func(i int) bool { return bf.f64[i] == 0 }),
		first(len(bf.i32), func(i int) bool { return bf.i32[i] == 0 }),
		first(len(bf.i64), func(i int) bool { return bf.i64[i] == 0 }),
		first(len(bf.u16), func(i int) bool { return bf.u16[i] == 0 }),
	} {
		if i >= 0 {
			return i
		}
	}
	return -1
}

// newRecycling returns a new backend's recycling view.
func newRecycling(opts Options) *Backend { return New(opts).Recycling().(*Backend) }

func releaseAll(be backend.Backend, ts []*tensor.Tensor) {
	for _, x := range ts {
		be.Release(x)
	}
}

// TestPoolReuse: after one step's buffers are released, a second step of
// the same shapes, or of shapes a few percent smaller, maps nothing new
// (a larger one from its third time), gets zero-filled storage of the
// right length, and the accounting counts live tensors only.
func TestPoolReuse(t *testing.T) {
	for _, grow := range []int{0, 3, -3} {
		t.Run(fmt.Sprintf("grow%d", grow), func(t *testing.T) {
			be := newRecycling(Options{Threads: 2})
			defer be.TrimPool()
			first := allocStep(t, be, 0)
			live := be.Stats().InUse[tensor.Host]
			releaseAll(be, first)
			if got := be.Stats().InUse[tensor.Host]; got != 0 {
				t.Fatalf("in use after release: %d, want 0 (pooled bytes must not count)", got)
			}
			if s := be.PoolStats(); s.Free < live-int64(100*5*4) || s.Free != s.Mapped {
				t.Fatalf("pool %+v after the step's %d bytes were released: want them kept, all mapped regions free", s, live)
			}
			before := be.PoolStats()
			second := allocStep(t, be, grow)
			after := be.PoolStats()
			// The same shapes, or smaller ones (the classes above are
			// searched too), always hit; larger ones may straddle a
			// class boundary, and then a third step of theirs hits.
			if misses := after.Misses - before.Misses; grow <= 0 && misses != 0 {
				t.Errorf("second step: %d new mappings, %d hits", misses, after.Hits-before.Hits)
			}
			for i, x := range second {
				want := stepShapes[i].shape[0] * (100 + grow) / 100 * x.Cols()
				bf := hostBuf(x)
				if n := len(bf.f32) + len(bf.f64) + len(bf.i32) + len(bf.i64) + len(bf.u16); n != want || x.Numel() != want {
					t.Errorf("tensor %d: storage of %d elements, want %d", i, n, want)
				}
				if pooled := bf.region != nil; pooled != (bf.bytes >= recycledMin) {
					t.Errorf("tensor %d of %d bytes: pooled %v", i, bf.bytes, pooled)
				}
			}
			releaseAll(be, second)
			if grow > 0 {
				third := be.PoolStats().Misses
				releaseAll(be, allocStep(t, be, grow))
				if again := be.PoolStats().Misses - third; again != 0 {
					t.Errorf("third step of the grown shapes: %d new mappings", again)
				}
			}
		})
	}
}

// TestPoolZeroFill: storage reused from the pool is zero-filled, as the
// Alloc contract says, though its previous user left data in it.
func TestPoolZeroFill(t *testing.T) {
	be := newRecycling(Options{Threads: 1})
	defer be.TrimPool()
	releaseAll(be, allocStep(t, be, 0)) // dirty regions into the pool
	hits := be.PoolStats().Hits
	var got []*tensor.Tensor
	for _, s := range stepShapes {
		x, err := be.AllocRecycled(s.dt, s.shape, tensor.Host)
		if err != nil {
			t.Fatal(err)
		}
		if i := nonZero(x); i >= 0 {
			t.Errorf("%v %v: element %d of reused storage is not zero", s.dt, s.shape, i)
		}
		got = append(got, x)
	}
	if be.PoolStats().Hits == hits {
		t.Fatal("no allocation came from the pool")
	}
	releaseAll(be, got)
}

// TestPoolCapacityTrim: with a capacity, the live bytes plus the pooled
// ones stay within it: an allocation that fits the capacity only without
// the pool's free regions empties the pool and succeeds, and one past the
// capacity still fails with an OutOfMemoryError.
func TestPoolCapacityTrim(t *testing.T) {
	const capBytes = 4 << 20
	for _, recycled := range []bool{true, false} {
		t.Run(fmt.Sprintf("recycled=%v", recycled), func(t *testing.T) {
			be := newRecycling(Options{Threads: 1, Capacity: capBytes})
			alloc := be.Alloc
			if recycled {
				alloc = be.AllocRecycled
			}
			a, err := be.AllocRecycled(tensor.Float32, []int{600_000}, tensor.Host) // 2.4 MB
			if err != nil {
				t.Fatal(err)
			}
			be.Release(a)
			if be.PoolStats().Free == 0 {
				t.Fatal("the released storage was not pooled")
			}
			b, err := alloc(tensor.Int32, []int{800_000}, tensor.Host) // 3.2 MB: too big for a's class
			if err != nil {
				t.Fatalf("an allocation within the capacity failed: %v", err)
			}
			if s := be.PoolStats(); s.Free != 0 || s.Trims != 1 {
				t.Errorf("after an allocation crossing the capacity with the pool: pool %+v, want emptied once", s)
			}
			_, err = alloc(tensor.Int32, []int{400_000}, tensor.Host)
			var oom *backend.OutOfMemoryError
			if !errors.As(err, &oom) {
				t.Fatalf("past the capacity: %v, want an OutOfMemoryError", err)
			}
			be.Release(b)
			if got := be.Stats().Peak[tensor.Host]; got != 3_200_000 {
				t.Errorf("peak %d, want 3200000 (live tensors only)", got)
			}
			be.TrimPool()
			if s := be.PoolStats(); s.Mapped != 0 {
				t.Errorf("after TrimPool with nothing live: %+v, want nothing mapped", s)
			}
		})
	}
}

// TestPoolBounded: the pool keeps at most PoolBytes free and unmaps the
// rest, TrimPool unmaps everything free, and a negative PoolBytes
// disables the pool (AllocRecycled is Alloc).
func TestPoolBounded(t *testing.T) {
	be := newRecycling(Options{Threads: 1, PoolBytes: 3 << 20})
	var ts []*tensor.Tensor
	for range 5 {
		x, err := be.AllocRecycled(tensor.Float32, []int{256 << 10}, tensor.Host) // 1 MiB
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, x)
	}
	if s := be.PoolStats(); s.Mapped != 5<<20 || s.Misses != 5 {
		t.Fatalf("after 5 MiB allocated: %+v", s)
	}
	releaseAll(be, ts)
	if s := be.PoolStats(); s.Free != 3<<20 || s.Drops != 2 || s.Mapped != 3<<20 {
		t.Errorf("pool %+v, want 3 MiB kept and 2 regions unmapped", s)
	}
	be.TrimPool()
	if s := be.PoolStats(); s.Free != 0 || s.Mapped != 0 || s.Trims != 1 {
		t.Errorf("after TrimPool: %+v", s)
	}
	off := newRecycling(Options{Threads: 1, PoolBytes: -1})
	releaseAll(off, allocStep(t, off, 0))
	releaseAll(off, allocStep(t, off, 0))
	if s := off.PoolStats(); s != (PoolStats{}) {
		t.Errorf("disabled pool: %+v", s)
	}
	plain := New(Options{Threads: 1}) // not a Recycling view: AllocRecycled is Alloc
	releaseAll(plain, allocStep(t, plain, 0))
	releaseAll(plain, allocStep(t, plain, 0))
	if s := plain.PoolStats(); s != (PoolStats{}) {
		t.Errorf("a backend that is not a recycling view used the pool: %+v", s)
	}
}

// TestPoolViewsShare: WithThreads views share the pool with the backend,
// as they share its accounting.
func TestPoolViewsShare(t *testing.T) {
	be := newRecycling(Options{Threads: 2})
	defer be.TrimPool()
	v := be.WithThreads(1).(*Backend)
	releaseAll(v, allocStep(t, v, 0))
	before := be.PoolStats()
	releaseAll(be, allocStep(t, be, 0))
	if after := be.PoolStats(); after.Misses != before.Misses {
		t.Errorf("the backend mapped %d regions after its view released the same shapes", after.Misses-before.Misses)
	}
}

// TestPoolConcurrent allocates, dirties, checks and releases from several
// goroutines at once (CPU trainers and the calibration share a backend);
// run it under -race. Every allocation must come zero-filled and no
// storage may be handed to two goroutines: each writes its id and reads
// it back.
func TestPoolConcurrent(t *testing.T) {
	be := newRecycling(Options{Threads: 2})
	defer be.TrimPool()
	var wg sync.WaitGroup
	errs := make(chan error, 4) // one error at most per goroutine
	for g := range 4 {
		wg.Go(func() {
			for it := range 50 {
				x, err := be.AllocRecycled(tensor.Float32, []int{70_000 + 3700*(it%5)}, tensor.Host)
				if err != nil {
					errs <- err
					return
				}
				if i := nonZero(x); i >= 0 {
					errs <- fmt.Errorf("goroutine %d: element %d not zero", g, i)
					return
				}
				v := F32(x)
				for i := range v {
					v[i] = float32(g + 1)
				}
				for i := range v {
					if v[i] != float32(g+1) {
						errs <- fmt.Errorf("goroutine %d: storage shared", g)
						return
					}
				}
				be.Release(x)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if s := be.PoolStats(); s.Hits == 0 || s.Free != s.Mapped || be.Stats().InUse[tensor.Host] != 0 {
		t.Errorf("pool %+v, in use %d", s, be.Stats().InUse[tensor.Host])
	}
}

func TestSizeClass(t *testing.T) {
	for _, tt := range []struct{ n, want int64 }{
		{0, 64 << 10}, {1, 64 << 10}, {64 << 10, 64 << 10}, {64<<10 + 1, 73728},
		{256 << 10, 256 << 10}, {256<<10 + 1, 294912}, {96 << 20, 100663296}, {96<<20 + 1, 109051904},
	} {
		if got := sizeClass(tt.n); got != tt.want {
			t.Errorf("sizeClass(%d) = %d, want %d", tt.n, got, tt.want)
		}
	}
	for n := int64(1); n < 1<<34; n = n*5/4 + 1 {
		c := sizeClass(n)
		if c < n || c%4096 != 0 || (n > 64<<10 && float64(c) > float64(n)*1.125) {
			t.Fatalf("sizeClass(%d) = %d: below, not whole pages or over 12.5%% more", n, c)
		}
	}
}

// BenchmarkStepAlloc allocates, touches and releases one step's buffers
// of a GraphSAGE program on coauthor-physics (the sizes measured there:
// 17 MB of values in 12 tensors, a 108 MB dropout scratch, 25 MB of
// index and keep bits), recycled and as Go slices.
//
// go test -run '^$' -bench StepAlloc -benchtime 20x ./core/backend/cpu/
func BenchmarkStepAlloc(b *testing.B) {
	for _, tt := range []struct {
		name  string
		alloc func(*Backend) func(tensor.DType, []int, tensor.Tier) (*tensor.Tensor, error)
	}{
		{"recycled", func(be *Backend) func(tensor.DType, []int, tensor.Tier) (*tensor.Tensor, error) {
			return be.AllocRecycled
		}},
		{"make", func(be *Backend) func(tensor.DType, []int, tensor.Tier) (*tensor.Tensor, error) { return be.Alloc }},
	} {
		b.Run(tt.name, func(b *testing.B) {
			be := newRecycling(Options{Threads: 1})
			defer be.TrimPool()
			alloc := tt.alloc(be)
			b.SetBytes(150 << 20)
			for i := range b.N {
				grow := i % 3 // batches differ slightly in size
				var ts []*tensor.Tensor
				for k := range 12 {
					x, err := alloc(tensor.Float32, []int{(1400 + 10*grow) * (k + 1) / 3, 256}, tensor.Host)
					if err != nil {
						b.Fatal(err)
					}
					ts = append(ts, x)
				}
				for _, s := range []struct {
					dt tensor.DType
					n  int
				}{{tensor.Float32, 27_000_000 + 10_000*grow}, {tensor.Int32, 6_200_000 + 10_000*grow}} {
					x, err := alloc(s.dt, []int{s.n}, tensor.Host)
					if err != nil {
						b.Fatal(err)
					}
					ts = append(ts, x)
				}
				for _, x := range ts { // the step writes its buffers
					bf := hostBuf(x)
					for j := 0; j < len(bf.f32); j += 1024 {
						bf.f32[j] = 1
					}
					for j := 0; j < len(bf.i32); j += 1024 {
						bf.i32[j] = 1
					}
				}
				releaseAll(be, ts)
			}
		})
	}
}

// TestPoolEvicts: a new mapping first unmaps free regions of at least its
// size, the longest free first, so that the mapped bytes follow the live ones
// when the steps' shapes move on; regions that still fit are reused.
func TestPoolEvicts(t *testing.T) {
	be := newRecycling(Options{Threads: 1})
	defer be.TrimPool()
	alloc := func(n int) *tensor.Tensor {
		t.Helper()
		x, err := be.AllocRecycled(tensor.Float32, []int{n}, tensor.Host)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	small, mid := alloc(256<<10), alloc(512<<10) // 1 MiB and 2 MiB regions
	be.Release(small)
	be.Release(mid)
	big := alloc(1 << 20) // 4 MiB: no free region fits
	s := be.PoolStats()
	if s.Evictions != 2 || s.Free != 0 || s.Mapped != 4<<20 {
		t.Errorf("after a 4 MiB mapping beside 3 MiB free: %+v, want both free regions unmapped, 4 MiB mapped", s)
	}
	be.Release(big)
	a := alloc(256 << 10) // 1 MiB: the 4 MiB region is more than two classes up
	if s := be.PoolStats(); s.Evictions != 3 || s.Mapped != 1<<20 {
		t.Errorf("after a 1 MiB mapping beside 4 MiB free: %+v, want the 4 MiB region unmapped", s)
	}
	be.Release(a)
	b := alloc(250 << 10) // fits the free 1 MiB region's class
	if s := be.PoolStats(); s.Evictions != 3 || s.Hits != 1 || s.Mapped != 1<<20 {
		t.Errorf("a fitting request: %+v, want a hit and no eviction", s)
	}
	be.Release(b)
}

// TestScratchNeverLive allocates scratch buffers of a few shapes (equal
// ones, and ones a size class apart) on a recycling view, releasing some
// between allocations, each filled with its own number: no buffer is
// ever handed out while another live one holds its storage (a live
// buffer's number would be overwritten), a released one is handed out
// again without being cleared (it holds its old number: no zeroing), and
// AllocRecycled still clears.
func TestScratchNeverLive(t *testing.T) {
	be := newRecycling(Options{Threads: 1})
	defer be.TrimPool()
	shapes := [][]int{{1000, 128}, {1000, 128}, {900, 128}, {1100, 128}, {3000, 16}}
	live := map[*tensor.Tensor]float32{}
	check := func(when string) {
		t.Helper()
		for x, v := range live {
			for i, g := range F32(x) {
				if g != v {
					t.Fatalf("%s: live buffer %v numbered %v holds %v at %d: its storage was handed out again", when, x.Shape(), v, g, i)
				}
			}
		}
	}
	next := float32(1)
	for round := range 6 {
		for _, s := range shapes {
			x, err := be.AllocScratch(tensor.Float32, s, tensor.Host)
			if err != nil {
				t.Fatal(err)
			}
			check(fmt.Sprintf("round %d, after allocating %v", round, s))
			for i := range F32(x) {
				F32(x)[i] = next
			}
			live[x] = next
			next++
		}
		check(fmt.Sprintf("round %d", round))
		k := 0
		for x := range live { // release about half, in map order
			if k%2 == round%2 {
				be.Release(x)
				delete(live, x)
			}
			k++
		}
	}
	// A released region comes back uncleared from AllocScratch, cleared
	// from AllocRecycled.
	for x := range live {
		be.Release(x)
		delete(live, x)
	}
	a, err := be.AllocScratch(tensor.Float32, []int{2000, 64}, tensor.Host)
	if err != nil {
		t.Fatal(err)
	}
	dirty(a)
	be.Release(a)
	hits := be.PoolStats().Hits
	b, err := be.AllocScratch(tensor.Float32, []int{2000, 64}, tensor.Host)
	if err != nil {
		t.Fatal(err)
	}
	if be.PoolStats().Hits != hits+1 || nonZero(b) != 0 {
		t.Errorf("a scratch buffer of a released one's shape: pool hits %d -> %d, first non-zero element %d; want a hit holding the old values", hits, be.PoolStats().Hits, nonZero(b))
	}
	be.Release(b)
	c, err := be.AllocRecycled(tensor.Float32, []int{2000, 64}, tensor.Host)
	if err != nil {
		t.Fatal(err)
	}
	if i := nonZero(c); i >= 0 {
		t.Errorf("AllocRecycled after a scratch buffer: element %d is not zero", i)
	}
	be.Release(c)
}
