package strategytests

import (
	"context"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strata/core/config"
	"strata/core/train"
	_ "strata/partitioners"
	_ "strata/plugins/backends"
	_ "strata/plugins/cache"
	_ "strata/plugins/layers"
	_ "strata/plugins/placement"
	"strata/plugins/strategy/internal/testkit"
	"strata/plugins/strategy/minibatch"
	"strings"
	"testing"
)

func TestBuildModel(t *testing.T) {
	const F, C = 1433, 7
	dir := t.TempDir()
	cases := []struct {
		name   string
		extra  string
		sets   []string
		params int64
		err    string // substring of the error; "" = success
	}{
		{"gcn", "", nil, F*16 + 16 + 16*C + C, ""},
		{"gcn 3 layers", "", []string{"model.layers=3"}, F*16 + 16 + 16*16 + 16 + 16*C + C, ""},
		{"sage", "", []string{`model.name="sage"`}, 2*F*16 + 16 + 2*16*C + C, ""},
		{"gat hidden is per head", "[model.options]\nheads = 4\n", []string{`model.name="gat"`, "model.hidden=8"},
			F*32 + 2*32 + 32 + 32*C + 2*C + C, ""},
		{"gcn residual: projections where widths differ", "", []string{"model.residual=true"}, F*16 + 16 + 16*C + C + F*16 + 16*C, ""},
		{"gcn residual, identity in the middle", "", []string{"model.residual=true", "model.layers=3"}, F*16 + 16 + 16*16 + 16 + 16*C + C + F*16 + 16*C, ""},
		{"gcn jk cat", "", []string{`model.jk="cat"`}, F*16 + 16 + 16*16 + 16 + 2*16*C + C, ""},
		{"gcn jk max", "", []string{`model.jk="max"`}, F*16 + 16 + 16*16 + 16 + 16*C + C, ""},
		{"gcn jk lstm (its ones are a buffer)", "", []string{`model.jk="lstm"`}, F*16 + 16 + 16*16 + 16 + 2*4*(16*16+16*16+16) + 2*16 + 1 + 16*C + C, ""},
		{"unknown option", "[model.options]\nhedas = 4\n", nil, 0, `test.toml:12: model.options.hedas: the "gcn" module does not use option "hedas"`},
		{"option of another model", "[model.options]\nheads = 4\n", nil, 0, `does not use option "heads"`},
		{"host key", "[model.options]\nin_dim = 4\n", nil, 0, "model.options.in_dim is set by strata for every layer"},
		{"missing module file", "", []string{`model.module="nope/missing.wasm"`}, 0, "model.module: model module "},
		{"module not wasm", "", []string{`model.module="` + filepath.Join(dir, "notwasm.wasm") + `"`}, 0, "model.module: model module"},
	}
	if err := os.WriteFile(filepath.Join(dir, "notwasm.wasm"), []byte("hello, not wasm"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := testkit.MustParse(t, testkit.CoraBase+c.extra, c.sets...)
			cfg.Path = filepath.Join(dir, "test.toml")
			m, err := train.BuildModel(context.Background(), cfg, testkit.TestHost(t), F, C)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want it to contain %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := m.Graph.NumParams(); got != c.params {
				t.Errorf("%d params, want %d", got, c.params)
			}
		})
	}
}

func TestCheckSupported(t *testing.T) {
	cases := []struct {
		sets []string
		err  string
	}{
		{nil, ""},
		{[]string{`sampler.name="full"`}, "sampler.name: sampler.full is set"},
		{[]string{`partition.name="range"`}, "partition.name: partitioner.range is set, but only micro-batching"},
		{[]string{`cache.name="degree"`}, "cache.name: cache.degree is set"},
		{[]string{"devices.count=2"}, "devices.count describes simulated devices"},
		{[]string{"devices.zero_copy=true"}, "devices.zero_copy describes simulated devices"},
		{[]string{`train.backend="sim"`, "devices.count=2"}, "trains on one device; several devices train data-parallel with train.mode = "},
		{[]string{`train.backend="sim"`, `devices.preset="dgx1-v100-8"`}, "several devices train data-parallel"},
	}
	for _, c := range cases {
		err := train.Check(context.Background(), testkit.MustParse(t, testkit.CoraBase, c.sets...), testkit.TestHost(t), true)
		if c.err == "" && err != nil || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%v: error %v, want %q", c.sets, err, c.err)
		}
	}
}

// comparable returns a result with the timing and memory fields zeroed.
func comparable(r *train.Result) train.Result {
	c := *r
	c.EpochTimeMedianS, c.EvalTimeMedianS, c.LoadTimeS, c.PeakRSSBytes = 0, 0, 0, 0
	c.SampleTimeS, c.ExtractTimeS, c.StageTimeS, c.TrainTimeS = 0, 0, 0, 0
	c.PeakTierBytes = nil
	if f, ok := c.Figures["minibatch"].(*minibatch.Figures); ok {
		g := *f
		g.SampledEdgesPerS = 0
		c.Figures = maps.Clone(c.Figures)
		c.Figures["minibatch"] = &g
	}
	return c
}

func TestRunDeterministic(t *testing.T) {
	ctx := context.Background()
	for _, model := range []string{"gcn", "gat"} {
		t.Run(model, func(t *testing.T) {
			var res [2]train.Result
			for i := range res {
				cfg := testkit.MustParse(t, testkit.CoraBase, `model.name="`+model+`"`)
				r, err := train.Run(ctx, cfg, train.Options{Host: testkit.TestHost(t)})
				if err != nil {
					t.Fatal(err)
				}
				res[i] = comparable(r)
			}
			if !reflect.DeepEqual(res[0], res[1]) {
				t.Errorf("two runs differ:\n%+v\n%+v", res[0], res[1])
			}
			if res[0].Epochs != 5 || res[0].FinalLoss <= 0 || math.IsNaN(res[0].FinalLoss) {
				t.Errorf("implausible result %+v", res[0])
			}
		})
	}
}

// TestFloat32MatchesFloat64 runs a full-graph step of the same model in
// both precisions, every dropout on: the float64 step is the reference
// for the float32 kernels, whose loss and gradients must be within
// compareFloat32Step's 2γ_K(u32)·100 (the float64 step's own error, γ_K
// of u64, is below the factor 2). Later steps have no such bound (Adam
// turns rounding noise into ±lr moves; compareFloat32Step says why);
// whole runs must still train (finite, falling loss).
func TestFloat32MatchesFloat64(t *testing.T) {
	ctx := context.Background()
	for _, model := range []string{"gcn", "sage", "gat", "gin"} {
		t.Run(model, func(t *testing.T) {
			sets := append(append(testkit.ModelSets(model), testkit.SplitDropouts(model)...), "train.eval_every=0")
			var steps [2][]testkit.StepRecord
			for i, dt := range []string{"float32", "float64"} {
				steps[i] = testkit.RunSteps(t, 1, testkit.CoraBase, append(append([]string(nil), sets...), `train.dtype="`+dt+`"`)...)
			}
			testkit.CompareFloat32Step(t, steps[0][0], steps[1][0], testkit.ChunkedSumLength(t, testkit.CoraBase, sets))
			r, err := train.Run(ctx, testkit.MustParse(t, testkit.CoraBase, append(sets, `train.dtype="float32"`)...), train.Options{Host: testkit.TestHost(t)})
			if err != nil {
				t.Fatal(err)
			}
			if first := steps[0][0].Loss; !(r.FinalLoss < first) || math.IsNaN(r.FinalLoss) {
				t.Errorf("float32 run ends at loss %v, first step %v", r.FinalLoss, first)
			}
		})
	}
}

func TestTrainingLearns(t *testing.T) {
	cfg := testkit.MustParse(t, testkit.CoraBase, "train.epochs=60")
	r, err := train.Run(context.Background(), cfg, train.Options{Host: testkit.TestHost(t)})
	if err != nil {
		t.Fatal(err)
	}
	if r.TestAcc < 0.7 {
		t.Errorf("GCN on Cora after 60 epochs: test accuracy %.3f, want >= 0.7", r.TestAcc)
	}
}

// TestMicroBatchesMatchFullGraph trains each model for a few epochs with
// every dropout on in float64, whole-graph and in micro-batches: the
// losses of every epoch, hence the gradients of every step, must agree.
func TestMicroBatchesMatchFullGraph(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		model, partitioner string
		k                  int
	}{
		{"gcn", "range", 3},
		{"sage", "random", 4},
		{"gat", "betty-reg", 3},
		{"gin", "hash", 2},
		{"gcn", "metis", 4},
	}
	for _, c := range cases {
		t.Run(c.model+"/"+c.partitioner, func(t *testing.T) {
			sets := append(testkit.SplitDropouts(c.model), `model.name="`+c.model+`"`, `train.dtype="float64"`, "train.epochs=3")
			full, err := train.Run(ctx, testkit.MustParse(t, testkit.CoraBase, sets...), train.Options{Host: testkit.TestHost(t)})
			if err != nil {
				t.Fatal(err)
			}
			micro, err := train.Run(ctx, testkit.MustParse(t, testkit.CoraBase, append(sets, fmt.Sprintf("train.micro_batches=%d", c.k), `partition.name="`+c.partitioner+`"`)...), train.Options{Host: testkit.TestHost(t)})
			if err != nil {
				t.Fatal(err)
			}
			if d := math.Abs(full.FinalLoss-micro.FinalLoss) / full.FinalLoss; d > testkit.SplitTol {
				t.Errorf("final loss: full graph %.12f, %d micro-batches %.12f (relative difference %.2g)", full.FinalLoss, c.k, micro.FinalLoss, d)
			}
			if testkit.Splits(micro).MicroBatches != c.k || testkit.Splits(micro).Redundancy < 1 {
				t.Errorf("micro-batch report: %d micro-batches, redundancy %.3f", testkit.Splits(micro).MicroBatches, testkit.Splits(micro).Redundancy)
			}
		})
	}
}

func TestMicroBatchErrors(t *testing.T) {
	cases := []struct {
		sets []string
		err  string
	}{
		{[]string{"train.micro_batches=4"}, "train.micro_batches = 4 needs a partitioner"},
		{[]string{"train.micro_batches=1000", `partition.name="range"`}, "more than the 140 training nodes"},
		{[]string{`partition.name="range"`}, "only micro-batching (fullgraph.micro_batches > 1) uses a partitioner"},
	}
	for _, c := range cases {
		_, err := train.Run(context.Background(), testkit.MustParse(t, testkit.CoraBase, c.sets...), train.Options{Host: testkit.TestHost(t)})
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%v: error %v, want %q", c.sets, err, c.err)
		}
	}
}

// TestSimulatedDevice trains on one simulated device: the numbers equal the
// CPU's, the traffic is counted, and a device too small for the whole graph
// fails with an out-of-memory error that micro-batches avoid.
func TestSimulatedDevice(t *testing.T) {
	ctx := context.Background()
	opts := train.Options{Host: testkit.TestHost(t)}
	cpuRes, err := train.Run(ctx, testkit.MustParse(t, testkit.CoraBase), opts)
	if err != nil {
		t.Fatal(err)
	}
	simRes, err := train.Run(ctx, testkit.MustParse(t, testkit.CoraBase, `train.backend="sim"`), opts)
	if err != nil {
		t.Fatal(err)
	}
	if cpuRes.FinalLoss != simRes.FinalLoss || cpuRes.TestAcc != simRes.TestAcc {
		t.Errorf("sim loss %v acc %v, cpu loss %v acc %v", simRes.FinalLoss, simRes.TestAcc, cpuRes.FinalLoss, cpuRes.TestAcc)
	}
	var up int64
	for _, l := range simRes.Traffic {
		if l.Link == "host->device0" {
			up = l.Bytes
		}
	}
	// At least the features (2708 x 1433 float32) crossed to the device.
	if up < 2708*1433*4 || simRes.TransferTimeS <= 0 {
		t.Errorf("traffic %+v, transfer time %v", simRes.Traffic, simRes.TransferTimeS)
	}
	// Every byte is counted under exactly one purpose, and the features
	// crossed once.
	var total, byPurpose int64
	for _, l := range simRes.Traffic {
		total += l.Bytes
	}
	for _, n := range simRes.TrafficByPurpose {
		byPurpose += n
	}
	if total != byPurpose || simRes.TrafficByPurpose["features"] != 2708*1433*4 {
		t.Errorf("traffic %d bytes over links, %d by purpose %v", total, byPurpose, simRes.TrafficByPurpose)
	}
	// The cpu backend trains on the host features in place (uncounted);
	// the device holds a copy.
	if simRes.PeakTierBytes["device0"] != cpuRes.PeakTierBytes["host"]+2708*1433*4 {
		t.Errorf("device peak %d, cpu host peak %d + features", simRes.PeakTierBytes["device0"], cpuRes.PeakTierBytes["host"])
	}

	small := []string{`train.backend="sim"`, "devices.memory_bytes=26000000"}
	if _, err := train.Run(ctx, testkit.MustParse(t, testkit.CoraBase, small...), opts); err == nil || !strings.Contains(err.Error(), "device0 out of memory") {
		t.Fatalf("whole graph on a 26 MB device: error %v, want out of memory", err)
	}
	var peaks []int64
	for _, k := range []string{"2", "8"} {
		r, err := train.Run(ctx, testkit.MustParse(t, testkit.CoraBase, append(small, "train.micro_batches="+k, `partition.name="betty-reg"`)...), opts)
		if err != nil {
			t.Fatalf("%s micro-batches: %v", k, err)
		}
		peaks = append(peaks, r.PeakTierBytes["device0"])
	}
	if !(peaks[1] < peaks[0] && peaks[0] <= 26000000) {
		t.Errorf("device peaks %v for 2 and 8 micro-batches: want them under capacity and falling", peaks)
	}
}

// TestMiniBatchFullNeighbourMatchesFullGraph: one mini-batch holding every
// training node over full-neighbour blocks is full-graph training.
func TestMiniBatchFullNeighbourMatchesFullGraph(t *testing.T) {
	ctx := context.Background()
	for _, model := range []string{"gcn", "sage", "gat"} {
		t.Run(model, func(t *testing.T) {
			sets := append(testkit.SplitDropouts(model), `model.name="`+model+`"`, `train.dtype="float64"`, "train.epochs=3")
			full, err := train.Run(ctx, testkit.MustParse(t, testkit.CoraBase, sets...), train.Options{Host: testkit.TestHost(t)})
			if err != nil {
				t.Fatal(err)
			}
			mini, err := train.Run(ctx, testkit.MustParse(t, testkit.CoraBase, append(sets, `train.mode="minibatch"`, `sampler.name="full"`, "sampler.layers=2", "train.batch_size=140")...), train.Options{Host: testkit.TestHost(t)})
			if err != nil {
				t.Fatal(err)
			}
			if d := math.Abs(full.FinalLoss-mini.FinalLoss) / full.FinalLoss; d > testkit.SplitTol {
				t.Errorf("final loss: full graph %.12f, mini-batch %.12f", full.FinalLoss, mini.FinalLoss)
			}
			if full.TestAcc != mini.TestAcc {
				t.Errorf("test accuracy: full graph %v, mini-batch %v", full.TestAcc, mini.TestAcc)
			}
		})
	}
}

func TestMiniBatchSampled(t *testing.T) {
	sets := []string{`model.name="sage"`, `train.mode="minibatch"`, `sampler.name="uniform"`, "sampler.fanouts=[10, 25]", "train.batch_size=32", "train.epochs=20"}
	var res [2]*train.Result
	for i := range res {
		r, err := train.Run(context.Background(), testkit.MustParse(t, testkit.CoraBase, sets...), train.Options{Host: testkit.TestHost(t)})
		if err != nil {
			t.Fatal(err)
		}
		res[i] = r
	}
	if res[0].TestAcc < 0.7 || res[0].Figures["minibatch"].(*minibatch.Figures).SampledEdgesPerS <= 0 || res[0].SampleTimeS <= 0 {
		t.Errorf("mini-batch SAGE on Cora: %+v", res[0])
	}
	if !reflect.DeepEqual(comparable(res[0]), comparable(res[1])) {
		t.Errorf("two seeded mini-batch runs differ: loss %v vs %v", res[0].FinalLoss, res[1].FinalLoss)
	}
	for _, c := range []struct {
		sets []string
		err  string
	}{
		{[]string{`train.mode="minibatch"`}, `train.mode = "minibatch" needs a neighbour sampler`},
		{[]string{`train.mode="minibatch"`, `sampler.name="uniform"`, "sampler.fanouts=[10]"}, "samples 1 layers but model.layers = 2"},
	} {
		_, err := train.Run(context.Background(), testkit.MustParse(t, testkit.CoraBase, c.sets...), train.Options{Host: testkit.TestHost(t)})
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%v: error %v, want %q", c.sets, err, c.err)
		}
	}
}

// TestMiniBatchFeatureCache trains on a simulated device with a degree
// cache of growing capacity: the numbers do not change (gathers are
// exact), the hit rate grows and fewer feature bytes cross the link.
func TestMiniBatchFeatureCache(t *testing.T) {
	base := []string{`model.name="sage"`, `train.mode="minibatch"`, `sampler.name="uniform"`, "sampler.fanouts=[5, 10]",
		"train.batch_size=70", "train.epochs=3", `train.backend="sim"`}
	var prev *train.Result
	for _, capacity := range []string{"", "0.1", "0.5"} {
		sets := base
		if capacity != "" {
			sets = append(append([]string(nil), base...), `cache.name="degree"`, "cache.capacity="+capacity)
		}
		r, err := train.Run(context.Background(), testkit.MustParse(t, testkit.CoraBase, sets...), train.Options{Host: testkit.TestHost(t)})
		if err != nil {
			t.Fatalf("capacity %q: %v", capacity, err)
		}
		if prev != nil {
			if r.FinalLoss != prev.FinalLoss {
				t.Errorf("capacity %s: loss %v differs from %v", capacity, r.FinalLoss, prev.FinalLoss)
			}
			if capacity != "0.1" && r.Figures["minibatch"].(*minibatch.Figures).CacheHitRate <= prev.Figures["minibatch"].(*minibatch.Figures).CacheHitRate {
				t.Errorf("capacity %s: hit rate %v not above %v", capacity, r.Figures["minibatch"].(*minibatch.Figures).CacheHitRate, prev.Figures["minibatch"].(*minibatch.Figures).CacheHitRate)
			}
			if r.TrafficByPurpose["features"] >= prev.TrafficByPurpose["features"] && capacity == "0.5" {
				t.Errorf("capacity %s: %d feature bytes, not fewer than %d", capacity, r.TrafficByPurpose["features"], prev.TrafficByPurpose["features"])
			}
		}
		prev = r
	}
	_, err := train.Run(context.Background(), testkit.MustParse(t, testkit.CoraBase, `train.mode="minibatch"`, `sampler.name="uniform"`, "sampler.fanouts=[5, 10]", `cache.name="degree"`), train.Options{Host: testkit.TestHost(t)})
	if err == nil || !strings.Contains(err.Error(), "a feature cache needs a device") {
		t.Errorf("cache on the cpu backend: error %v", err)
	}
}

// TestDataParallel trains one full-neighbour batch on 1, 2 and 4 simulated
// devices: synchronous SGD with all-reduced gradients follows the same
// trajectory, and the gradients cross the links.
func TestDataParallel(t *testing.T) {
	base := []string{`model.name="sage"`, `train.dtype="float64"`, "model.dropout=0.5", "train.epochs=3",
		`train.mode="minibatch"`, `sampler.name="full"`, "sampler.layers=2", "train.batch_size=140", `train.backend="sim"`}
	var losses []float64
	for _, devices := range [][]string{{}, {"devices.count=2"}, {`devices.preset="nvlink-clique-4"`}} {
		r, err := train.Run(context.Background(), testkit.MustParse(t, testkit.CoraBase, append(append([]string(nil), base...), devices...)...), train.Options{Host: testkit.TestHost(t)})
		if err != nil {
			t.Fatalf("%v: %v", devices, err)
		}
		losses = append(losses, r.FinalLoss)
		if len(devices) > 0 && r.TrafficByPurpose["gradients"] == 0 {
			t.Errorf("%v: no gradient traffic: %v", devices, r.TrafficByPurpose)
		}
		if len(devices) > 0 && r.PeakTierBytes["device1"] == 0 {
			t.Errorf("%v: device1 was not used: %v", devices, r.PeakTierBytes)
		}
	}
	for i, l := range losses[1:] {
		if d := math.Abs(l-losses[0]) / losses[0]; d > testkit.SplitTol {
			t.Errorf("run %d: loss %.12f, one device %.12f", i+1, l, losses[0])
		}
	}
}

func TestCustomTopology(t *testing.T) {
	mb := []string{`train.mode="minibatch"`, `sampler.name="uniform"`, "sampler.fanouts=[5, 5]", "train.epochs=1", `train.backend="sim"`}
	cases := []struct {
		sets []string
		err  string
	}{
		{[]string{"devices.host_gbps=[16.0, 16.0, 16.0]", "devices.peer_gbps=[[0.0, 50.0, 0.0], [50.0, 0.0, 25.0], [0.0, 25.0, 0.0]]"}, ""},
		{[]string{"devices.host_gbps=[16.0, 16.0]", "devices.peer_gbps=[[0.0, 50.0], [0.0, 0.0]]"}, "peer_gbps[0][1] = 50 but peer_gbps[1][0] = 0: NVLink links are bidirectional"},
		{[]string{"devices.host_gbps=[16.0, 16.0, 16.0]", "devices.peer_gbps=[[0.0, 50.0], [50.0, 0.0]]"}, "devices.peer_gbps has 2 rows for the 3 devices"},
		{[]string{"devices.host_gbps=[16.0, 16.0]", "devices.peer_gbps=[[0.0, 50.0, 0.0], [50.0, 0.0]]"}, "devices.peer_gbps[0] has 3 entries, want 2"},
		{[]string{"devices.host_gbps=[16.0, 16.0]", "devices.peer_gbps=[[9.0, 1.0], [1.0, 0.0]]"}, "a device has no link to itself"},
		{[]string{"devices.peer_gbps=[[0.0]]"}, "peer_gbps is set without devices.host_gbps"},
		{[]string{"devices.host_gbps=[16.0]", `devices.preset="pcie-only"`}, "remove devices.preset"},
		{[]string{"devices.host_gbps=[0.0]"}, "devices.host_gbps[0] = 0"},
	}
	for _, c := range cases {
		// A bad value is a config error; a bad shape is found by Run.
		cfg, err := config.Parse("test.toml", []byte(testkit.CoraBase), append(append([]string(nil), mb...), c.sets...)...)
		if err == nil {
			cfg.Output.Progress = "off"
			_, err = train.Run(context.Background(), cfg, train.Options{Host: testkit.TestHost(t)})
		}
		if c.err == "" && err != nil || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%v: error %v, want %q", c.sets, err, c.err)
		}
	}
}

// TestPlacedFeatureCache trains data-parallel on the simulated DGX-1 with a
// degree cache placed by XGNN's solver: the numbers equal those of the
// interleaved cache (gathers are exact), and devices read peers' rows.
func TestPlacedFeatureCache(t *testing.T) {
	base := []string{`model.name="sage"`, `train.mode="minibatch"`, `sampler.name="uniform"`, "sampler.fanouts=[5, 5]",
		"train.batch_size=70", "train.epochs=2", `train.backend="sim"`, `devices.preset="nvlink-ring-4"`,
		`cache.name="degree"`, "cache.capacity=0.3"}
	var losses []float64
	for _, extra := range [][]string{nil, {`placement.name="xgnn"`}, {`placement.name="clique"`}} {
		r, err := train.Run(context.Background(), testkit.MustParse(t, testkit.CoraBase, append(append([]string(nil), base...), extra...)...), train.Options{Host: testkit.TestHost(t)})
		if err != nil {
			t.Fatalf("%v: %v", extra, err)
		}
		losses = append(losses, r.FinalLoss)
		peer := int64(0)
		for _, l := range r.Traffic {
			if strings.HasPrefix(l.Link, "device") && !strings.HasSuffix(l.Link, "host") {
				peer += l.Bytes
			}
		}
		if peer == 0 {
			t.Errorf("%v: no device-to-device traffic", extra)
		}
	}
	if losses[1] != losses[0] || losses[2] != losses[0] {
		t.Errorf("losses %v differ between placements", losses)
	}
	_, err := train.Run(context.Background(), testkit.MustParse(t, testkit.CoraBase, `placement.name="xgnn"`), train.Options{Host: testkit.TestHost(t)})
	if err == nil || !strings.Contains(err.Error(), "only strategies that read features through a [cache] use") {
		t.Errorf("placement without a cache: error %v", err)
	}
}
