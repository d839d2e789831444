package hybrid

import (
	"math"
	"runtime"
	"strconv"
	"testing"

	"strata/plugins/strategy/internal/testkit"
)

// TestHostBudgets: a described host's cores are the budget DRM splits
// and the model prices; the stages run on this machine's threads, each
// task's share scaled down, at least one.
func TestHostBudgets(t *testing.T) {
	here := runtime.GOMAXPROCS(0)
	cases := []struct {
		name                 string
		h                    HybridOptions
		model, exec          int
		st                   drmState // a described state whose execution is checked
		checkScaledExecution bool
	}{
		{name: "this machine", h: HybridOptions{}, model: here, exec: here},
		{name: "this machine, threads", h: HybridOptions{Threads: 1}, model: 1, exec: 1},
		{name: "described host", h: HybridOptions{Host: HostSpec{Cores: 128}}, model: 128, exec: min(here, 128),
			st: drmState{sample: 32, load: 32, train: 64}, checkScaledExecution: true},
		{name: "described host, threads", h: HybridOptions{Host: HostSpec{Cores: 128}, Threads: 64}, model: 64, exec: min(here, 64),
			st: drmState{sample: 16, load: 1, train: 47}, checkScaledExecution: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			model, exec := budgets(c.h)
			if model != c.model || exec != c.exec {
				t.Fatalf("budgets = %d, %d; want %d, %d", model, exec, c.model, c.exec)
			}
			s := &hybridStepper{h: c.h, budget: model, execBudget: exec}
			if !c.checkScaledExecution {
				if got := s.exec(drmState{sample: 3, load: 2, train: 5}); got != (drmState{sample: 3, load: 2, train: 5}) {
					t.Fatalf("exec without a described host changed the state: %+v", got)
				}
				return
			}
			got := s.exec(c.st)
			for _, v := range [][2]int{{got.sample, c.st.sample}, {got.load, c.st.load}, {got.train, c.st.train}} {
				want := max(1, int(float64(v[1])*float64(exec)/float64(model)+0.5))
				if v[0] != want || v[0] < 1 || v[0] > exec {
					t.Fatalf("exec(%+v) = %+v: a task of %d described threads runs on %d, want %d of this machine's %d", c.st, got, v[1], v[0], want, exec)
				}
			}
		})
	}
}

// TestHostMemoryBound: the described host's memory bandwidth bounds the
// loader's gather (Eq. 7's BW_DDR): with cpu_gbps x load threads above
// mem_gbps, the predicted loading is the bytes over mem_gbps, so the
// same steps priced without the bound take (cpu_gbps x threads) /
// mem_gbps times less. Eq. 7 as printed (paper_model, no first-touch
// term) makes both pure bytes over a rate; the steps are the same (DRM
// off, one seed).
func TestHostMemoryBound(t *testing.T) {
	sets := []string{`train.mode="hybrid"`, `train.backend="sim"`, "devices.count=2", "hybrid.cpu_share=0.5", "hybrid.paper_model=true",
		"hybrid.cpu_gbps=10", "hybrid.host.cores=8", "train.batch_size=16", `data.split="random-20-30-seed0"`}
	load := func(extra ...string) (float64, string) {
		_, rec := oneEpoch(t, testkit.MustParse(t, hybridBase, append(sets, extra...)...))
		v, err := strconv.ParseFloat(rec.Extra["load_s_pred"], 64)
		if err != nil || v <= 0 {
			t.Fatalf("load_s_pred = %q: %v", rec.Extra["load_s_pred"], err)
		}
		return v, rec.Extra["hybrid_threads"]
	}
	free, threads := load()
	if threads != "2/2/4" {
		t.Fatalf("threads sample/load/train %s on a described host of 8 cores, want 2/2/4 (a quarter each to sampling and loading)", threads)
	}
	bound, _ := load("hybrid.host.mem_gbps=5")
	// 2 load threads x 10 GB/s against 5 GB/s.
	if want := free * 20 / 5; !close6(bound, want) {
		t.Errorf("loading with mem_gbps = 5: %g s, want %g (the unbounded %g x 20/5)", bound, want, free)
	}
	loose, _ := load("hybrid.host.mem_gbps=1000")
	if !close6(loose, free) {
		t.Errorf("loading with a bound above the threads' rate: %g s, want the unbounded %g", loose, free)
	}
}

// close6 compares two values read from an epoch record, which prints 6
// significant digits: each is within 5e-6 of its value, relatively, so
// two equal values differ by at most 1e-5 of either.
func close6(a, b float64) bool { return math.Abs(a-b) <= 1e-5*math.Abs(b) }
