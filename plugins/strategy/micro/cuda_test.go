//go:build cuda

package micro

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"testing"

	"strata/core/sampling"
	"strata/core/train"
	"strata/plugins/strategy/internal/microsplit"
	"strata/plugins/strategy/internal/steprun"
	"strata/plugins/strategy/internal/testkit"
)

// mockDeviceBytes is the device memory of the mock driver
// (MOCKCUDA_MEM_BYTES) that TestCUDAAutoMicroBatches trains on: too
// little for Cora's whole batch by the estimate.
const mockDeviceBytes = 24 << 20

// cudaAutoChild marks the test's own child process, which runs on the
// small device.
const cudaAutoChild = "STRATA_MICRO_CUDA_AUTO_CHILD"

// TestCUDAAutoMicroBatches trains micro_batches = "auto" on the cuda
// backend (make cuda-check: the CPU mock of the driver, given a device of
// mockDeviceBytes; the mock's device size is read once per process, so
// the test reruns itself with it). K is the smallest split whose largest
// micro-batch fits the device's memory pool by the estimate (K-1 does
// not), its steps run without running out of memory, and they train the
// parameters that the same K, fixed, trains.
func TestCUDAAutoMicroBatches(t *testing.T) {
	if !onSmallDevice(t) {
		return
	}
	ctx := context.Background()
	sets := []string{`train.backend="cuda"`, `train.dtype="float64"`, `model.name="sage"`, `partition.name="betty-reg"`, "output.progress=off"}
	auto := append([]string{`train.micro_batches="auto"`}, sets...)
	const steps = 2
	var k int
	var est, capacity int64
	got, err := testkit.StepsWith(ctx, t, steps, testkit.MustParse(t, testkit.CoraBase, auto...), func(st train.Stepper) {
		m := st.(*microBatches)
		k, est, capacity = len(m.batches), m.estPeak, m.capacity
		// Evaluation runs in the chunks "auto" fitted too.
		if err := m.Predict(ctx, make([]int32, m.Env.DS.NumNodes)); err != nil {
			t.Fatalf("evaluation: %v", err)
		}
	})
	if err != nil {
		t.Fatalf("auto: %v", err)
	}
	t.Logf("auto: K = %d, the largest micro-batch estimated at %d bytes of the pool's %d", k, est, capacity)
	if k < 2 || est > capacity || capacity > mockDeviceBytes {
		t.Fatalf("auto: K = %d, estimated %d, capacity %d on a %d-byte device", k, est, capacity, int64(mockDeviceBytes))
	}
	// The same K, fixed, trains the same parameters.
	want, err := testkit.StepsIn(ctx, t, steps, testkit.MustParse(t, testkit.CoraBase, append([]string{"train.micro_batches=" + strconv.Itoa(k)}, sets...)...))
	if err != nil {
		t.Fatalf("K = %d: %v", k, err)
	}
	if d := testkit.MaxRelDiff(t, got[steps-1].Params, want[steps-1].Params); d > testkit.SplitTol {
		t.Errorf("auto's parameters differ from K = %d's by %.3g (bound %.3g)", k, d, testkit.SplitTol)
	}
	// One micro-batch fewer does not fit by the estimate (on a fresh
	// backend, as the run's; below K = 16 the search steps by one, so it
	// tried K-1).
	e := testkit.TestEnv(t, auto...)
	s, err := microsplit.NewSplitter(ctx, testkit.MustParse(t, testkit.CoraBase, auto...), "training nodes")
	if err != nil {
		t.Fatal(err)
	}
	if s.Est, s.Capacity, err = microsplit.NewEstimator(ctx, testkit.MustParse(t, testkit.CoraBase, auto...), e, true); err != nil {
		t.Fatal(err)
	}
	defer s.Est.Close()
	whole, err := sampling.Full{Hops: len(steprun.GraphsPerLayer(e.Model))}.Sample(ctx, e.Adjs.Adj, e.DS.Train, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, fewer, err := s.Split(ctx, whole, k-1)
	if err != nil {
		t.Fatal(err)
	}
	if fewer.Peak <= s.Capacity {
		t.Errorf("K-1 = %d micro-batches fit by the estimate (%d of %d bytes): auto chose K = %d", k-1, fewer.Peak, s.Capacity, k)
	}
}

// TestCUDAAutoMiniBatches trains sampled mini-batches split with "auto"
// on the same small device (minibatch.micro_batches): each batch's K fits
// the device's memory pool by the estimate, evaluation in the chunks it
// fitted, and the run ends without running out of memory.
func TestCUDAAutoMiniBatches(t *testing.T) {
	if !onSmallDevice(t) {
		return
	}
	sets := []string{`train.backend="cuda"`, `model.name="sage"`, `train.mode="minibatch"`, `sampler.name="uniform"`, "sampler.fanouts=[5, 10]",
		"train.batch_size=140", `train.micro_batches="auto"`, `partition.name="betty-reg"`, "output.progress=off", "train.epochs=1"}
	r, err := train.Run(context.Background(), testkit.MustParse(t, testkit.CoraBase, sets...), train.Options{Host: testkit.TestHost(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("K = %d, the largest micro-batch estimated at %d bytes, measured %d", testkit.Splits(r).MicroBatches, r.EstimatedPeakBytes, r.PeakTierBytes["device0"])
	if !testkit.Splits(r).Auto || r.EstimatedPeakBytes == 0 || r.EstimatedPeakBytes > mockDeviceBytes {
		t.Errorf("auto: K = %d, estimated %d on a %d-byte device", testkit.Splits(r).MicroBatches, r.EstimatedPeakBytes, int64(mockDeviceBytes))
	}
}

// onSmallDevice reports whether the test runs on the mock's device of
// mockDeviceBytes; if not, it runs the test in a child process that does
// (the mock reads its device size once per process), and the caller
// returns.
func onSmallDevice(t *testing.T) bool {
	if os.Getenv(cudaAutoChild) != "" {
		return true
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.v")
	cmd.Env = append(os.Environ(), cudaAutoChild+"=1", "MOCKCUDA_MEM_BYTES="+strconv.Itoa(mockDeviceBytes))
	out, err := cmd.CombinedOutput()
	t.Logf("on a %d-byte device:\n%s", mockDeviceBytes, out)
	if err != nil {
		t.Fatalf("the run on a %d-byte device: %v", mockDeviceBytes, err)
	}
	return false
}
