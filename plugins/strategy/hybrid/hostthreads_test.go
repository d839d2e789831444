package hybrid

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/pprof"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"strata/core/train"
	"strata/plugins/strategy/internal/testkit"
)

// TestHostCapacity: the host stages share the budget less the CPU
// trainers' threads, at least one.
func TestHostCapacity(t *testing.T) {
	cases := []struct{ budget, reserved, want int }{
		{16, 8, 8}, {2, 1, 1}, {1, 1, 1}, {2, 2, 1}, {4, 0, 4}, {0, 0, 1}, {3, 5, 1},
	}
	for _, c := range cases {
		if got := hostCapacity(c.budget, c.reserved); got != c.want {
			t.Errorf("hostCapacity(%d, %d) = %d, want %d", c.budget, c.reserved, got, c.want)
		}
		if got := newHostThreads(c.budget, c.reserved).capacity(); got != c.want {
			t.Errorf("capacity of budget %d less %d = %d, want %d", c.budget, c.reserved, got, c.want)
		}
	}
}

// TestHostThreadsNeverOverBudget: stages of one to three threads taking
// turns never hold more than the capacity at once, are granted at most
// the capacity, and a reservation that grows holds new stages back.
func TestHostThreadsNeverOverBudget(t *testing.T) {
	cases := []struct {
		name             string
		budget, reserved int
	}{{"2 cores, 1 trainer thread", 2, 1}, {"16 cores, 8", 16, 8}, {"budget taken by the trainers", 4, 4}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHostThreads(c.budget, c.reserved)
			capacity := h.capacity()
			var held, most atomic.Int64
			var wg sync.WaitGroup
			for g := range 6 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range 50 {
						n, done, err := h.acquire(context.Background(), 1+(g+i)%3)
						if err != nil {
							t.Error(err)
							return
						}
						if n < 1 || n > capacity {
							t.Errorf("granted %d threads, capacity %d", n, capacity)
						}
						now := held.Add(int64(n))
						for m := most.Load(); now > m && !most.CompareAndSwap(m, now); m = most.Load() {
						}
						time.Sleep(20 * time.Microsecond)
						held.Add(-int64(n))
						done()
						done() // a second call gives nothing back twice
					}
				}()
			}
			wg.Wait()
			if m := most.Load(); m > int64(capacity) {
				t.Fatalf("the stages held %d threads at once, capacity %d", m, capacity)
			}
			if peak, _ := h.takeStats(); peak > capacity || peak < 1 {
				t.Fatalf("peak %d, capacity %d", peak, capacity)
			}
			if h.busy != 0 {
				t.Fatalf("%d threads still held after every stage gave its back", h.busy)
			}
		})
	}
}

// TestHostThreadsWaitAndCancel: a stage waits while the threads are held
// or reserved, goes on once they are free, and gives up with its
// context's error when cancelled.
func TestHostThreadsWaitAndCancel(t *testing.T) {
	h := newHostThreads(3, 1) // two host threads
	_, done, err := h.acquire(context.Background(), 2)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan int, 1)
	go func() {
		n, d, err := h.acquire(context.Background(), 1)
		if err != nil {
			t.Error(err)
		}
		d()
		got <- n
	}()
	select {
	case <-got:
		t.Fatal("a stage took a thread while the others held them all")
	case <-time.After(20 * time.Millisecond):
	}
	done()
	if n := <-got; n != 1 {
		t.Fatalf("granted %d, want 1", n)
	}
	if _, wait := h.takeStats(); wait < 0.015 {
		t.Fatalf("waited %.3f s, want the 20 ms it was held back", wait)
	}
	// The trainers take every thread but one: a stage asking for two gets one.
	h.reserve(3)
	if n, d, err := h.acquire(context.Background(), 2); err != nil || n != 1 {
		t.Fatalf("with every thread reserved: granted %d (%v), want 1", n, err)
	} else {
		d()
	}
	// Cancelled while waiting.
	_, hold, _ := h.acquire(context.Background(), 1)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, d, err := h.acquire(ctx, 1)
		d()
		errc <- err
	}()
	time.Sleep(5 * time.Millisecond)
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled wait returned %v, want context.Canceled", err)
	}
	hold()
	if h.busy != 0 {
		t.Fatalf("%d threads held after the cancelled wait", h.busy)
	}
}

// TestHybridHostStagesWithinBudget: in an epoch of hybrid training the
// host stages (sampling, loading, the CPU trainers' bind) never hold
// more threads at once than the budget leaves beside the CPU trainers',
// with and without two-stage prefetch, whatever the budget and however
// many CPU trainers share the training threads.
func TestHybridHostStagesWithinBudget(t *testing.T) {
	budgets := []int{1, 2, runtime.NumCPU()}
	slices.Sort(budgets)
	budgets = slices.Compact(budgets)
	for _, budget := range budgets {
		for _, trainers := range []int{1, 3} {
			for _, prefetch := range []bool{true, false} {
				t.Run(fmt.Sprintf("threads=%d trainers=%d prefetch=%v", budget, trainers, prefetch), func(t *testing.T) {
					cfg := testkit.MustParse(t, hybridBase, "train.batch_size=32", `train.mode="hybrid"`, "hybrid.cpu_share=1",
						fmt.Sprintf("hybrid.threads=%d", budget), fmt.Sprintf("hybrid.cpu_trainers=%d", trainers),
						fmt.Sprintf("hybrid.prefetch=%v", prefetch))
					_, st := testkit.NewTestStepper(t, cfg)
					if _, err := st.Epoch(context.Background(), 3, func() error { return nil }); err != nil {
						t.Fatal(err)
					}
					var res train.Result
					st.(train.ResultReporter).ReportResult(&res)
					h := res.Figures["hybrid"].(HybridFigures)
					// Each CPU trainer trains on its share of the training
					// threads, at least one.
					want := hostCapacity(budget, trainers*max(1, initialState(1, budget).train/trainers))
					if int(h["host_threads"]) != want {
						t.Errorf("host_threads = %v, want %d", h["host_threads"], want)
					}
					if h["host_threads_peak"] < 1 || h["host_threads_peak"] > h["host_threads"] {
						t.Errorf("the host stages held %v threads at once, %v allowed", h["host_threads_peak"], h["host_threads"])
					}
					if h["steps"] < 2 {
						t.Fatalf("%v steps: too few to overlap", h["steps"])
					}
				})
			}
		}
	}
}

// TestStageLabel: the context a stage hands on carries its pprof label.
func TestStageLabel(t *testing.T) {
	for _, stage := range []string{"sample", "load", "bind", "train"} {
		got := make(chan string, 1)
		go func() {
			v, _ := pprof.Label(stageLabel(context.Background(), stage), stageLabelKey)
			got <- v
		}()
		if v := <-got; v != stage {
			t.Errorf("label %q, want %q", v, stage)
		}
	}
}

// TestParseCacheSize: sysfs cache sizes, and what is not one.
func TestParseCacheSize(t *testing.T) {
	cases := []struct {
		in   string
		want int64
	}{{"266240K\n", 266240 << 10}, {"32M", 32 << 20}, {"1G", 1 << 30}, {"512", 512}, {"", 0}, {"K", 0}, {"-4K", 0}, {"12X", 0}, {"99999999999999G", 0}}
	for _, c := range cases {
		if got := parseCacheSize(c.in); got != c.want {
			t.Errorf("parseCacheSize(%q) = %d, want %d", c.in, got, c.want)
		}
	}
	if lastLevelCache() <= 0 {
		t.Error("no last-level cache size")
	}
}

// TestGatherSets: the gather probe's batches move twice the last-level
// cache, between probeBatches and maxGatherSets of them.
func TestGatherSets(t *testing.T) {
	cases := []struct {
		perCall, llc int64
		want         int
	}{
		{34 << 20, 260 << 20, 16},   // R-MAT 2^20 on the development VM
		{128 << 20, 260 << 20, 5},   // coauthor-physics' 64 MiB of rows
		{1 << 30, 32 << 20, 4},      // calls larger than the cache
		{100 << 10, 260 << 20, 32},  // a small graph: capped
		{0, 32 << 20, probeBatches}, // nothing gathered
	}
	for _, c := range cases {
		if got := gatherSets(c.perCall, c.llc); got != c.want {
			t.Errorf("gatherSets(%d, %d) = %d, want %d", c.perCall, c.llc, got, c.want)
		}
	}
}
