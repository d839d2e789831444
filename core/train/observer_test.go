package train

import (
	"context"
	"encoding/csv"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"strata/core/backend"
	"strata/core/config"
	"strata/core/engine"
	"strata/core/graph"
	"strata/core/safefile"
	"strata/core/tensor"
)

// fakeBackend is as much of a backend as the loop needs with fakeStepper:
// a name, one tier and its peaks (the stepper has no tensors).
type fakeBackend struct{ backend.Backend }

func (fakeBackend) Name() string         { return "fake" }
func (fakeBackend) Tiers() []tensor.Tier { return []tensor.Tier{tensor.Host} }
func (fakeBackend) Stats() backend.Stats {
	return backend.Stats{InUse: map[tensor.Tier]int64{}, Peak: map[tensor.Tier]int64{tensor.Host: 64}}
}

// fakeStepper follows a script: epoch ep's loss (1/(ep+1) unless set;
// NaN diverges), its error, and how many of the 4 validation nodes the
// evaluation after it predicts right (valid[ep]). cancelAt cancels the
// run's context during that epoch's step, which then fails with it.
type fakeStepper struct {
	loss     map[int]float64
	fail     map[int]error
	valid    []int
	cancelAt int
	cancel   context.CancelFunc
	ep       int // the epoch of the last step
}

func (f *fakeStepper) Epoch(ctx context.Context, seed uint64, update func() error) (float64, error) {
	f.ep = int(seed % 1_000_003)
	if f.ep == f.cancelAt && f.cancel != nil {
		f.cancel()
		return 0, ctx.Err()
	}
	if err := f.fail[f.ep]; err != nil {
		return 0, err
	}
	if err := update(); err != nil {
		return 0, err
	}
	if v, ok := f.loss[f.ep]; ok {
		return v, nil
	}
	return 1 / float64(f.ep+1), nil
}

func (f *fakeStepper) Predict(_ context.Context, pred []int32) error {
	clear(pred)
	for i := range f.valid[f.ep] {
		pred[2+i] = 1 // the validation nodes are 2..5, labelled 1
	}
	return nil
}

func (f *fakeStepper) Params() *engine.Params { return new(engine.Params) }
func (f *fakeStepper) Release()               {}

// spy counts its hooks and records how the run ended; failAt makes its
// epoch hook fail at that epoch.
type spy struct {
	starts, epochs int
	ends           []endKind
	failAt         int
}

var errSpy = errors.New("spy: failed")

func (s *spy) start(context.Context) (bool, error) { s.starts++; return false, nil }
func (s *spy) epoch(_ context.Context, rec *EpochRecord) (bool, error) {
	s.epochs++
	if rec.Epoch == s.failAt {
		return false, errSpy
	}
	return false, nil
}
func (s *spy) end(e *ending) error { s.ends = append(s.ends, e.kind); return nil }

// testConfig writes a config with every output in a fresh directory;
// train holds [train] lines.
func testConfig(t *testing.T, train ...string) *config.Config {
	t.Helper()
	dir := t.TempDir()
	text := "[data]\ndataset = \"embedded:cora\"\n[train]\nseed = 1\n" + strings.Join(train, "\n") +
		"\n[output]\ncsv = \"e.csv\"\nlog = \"e.jsonl\"\nmodel = \"m.model\"\ncheckpoint = \"ck.bin\"\n"
	return loadConfigText(t, dir, text)
}

// loadConfigText writes text to dir/c.toml and loads it.
func loadConfigText(t *testing.T, dir, text string) *config.Config {
	t.Helper()
	path := filepath.Join(dir, "c.toml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// testLoop is a loop over fakeStepper on 8 nodes: 2 training, 4
// validation, 2 test nodes, all of class 1.
func testLoop(t *testing.T, cfg *config.Config, st Stepper) *loop {
	t.Helper()
	be := fakeBackend{}
	opt, err := newRunOptimizer(cfg, be, newLRClock(cfg))
	if err != nil {
		t.Fatal(err)
	}
	ds := &graph.Dataset{Name: "fake", NumNodes: 8, NumClasses: 2, Labels: []int32{1, 1, 1, 1, 1, 1, 1, 1},
		Train: []int32{0, 1}, Valid: []int32{2, 3, 4, 5}, Test: []int32{6, 7}}
	res := &Result{BestEpoch: -1, ConfigSHA256: "cfg", PeakTierBytes: map[string]int64{}}
	return &loop{cfg: cfg, be: be, st: st, opt: opt, lr: newLRClock(cfg), ds: ds, res: res, model: &Model{Name: "fake", SHA256: "mod"}}
}

// csvRowsOf returns output.csv's rows, or nil when there is no file.
func csvRowsOf(t *testing.T, path string) [][]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(strings.NewReader(string(b))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func exists(path string) bool { _, err := os.Stat(path); return err == nil }

// TestLoopExits runs the loop to each of its ends: every observer's end
// hook runs once, with the kind of the exit, and the outputs are those of
// that exit (committed files for a finished or stopped run, output.model
// only for a finished one, nothing for a failed one); every lock is
// released.
func TestLoopExits(t *testing.T) {
	boom := errors.New("boom")
	for _, c := range []struct {
		name      string
		train     []string
		st        fakeStepper
		afterStop int // AfterEpoch cancels after this epoch (-1: never)
		spyFail   int
		setupFail bool // output.csv is locked by another writer
		kind      endKind
		isErr     func(error) bool
		epochs    int // epochs run (a diverged one included)
		rows      int // csv rows besides the header
		bestEpoch int
	}{
		{name: "finished", st: fakeStepper{valid: []int{1, 2, 2, 3}}, kind: endFinished, epochs: 4, rows: 4, bestEpoch: 3},
		{name: "early stop", train: []string{"patience = 2"}, st: fakeStepper{valid: []int{3, 2, 3, 1}}, kind: endFinished, epochs: 3, rows: 3, bestEpoch: 0},
		{name: "diverged", st: fakeStepper{valid: []int{1, 2, 2, 3}, loss: map[int]float64{2: math.NaN()}}, kind: endStopped,
			isErr: func(err error) bool { var de *DivergedError; return errors.As(err, &de) && de.Epoch == 2 }, epochs: 3, rows: 2, bestEpoch: 1},
		{name: "cancelled after an epoch", st: fakeStepper{valid: []int{1, 2, 2, 3}}, afterStop: 1, kind: endStopped,
			isErr: func(err error) bool { return errors.Is(err, context.Canceled) }, epochs: 2, rows: 2, bestEpoch: 1},
		{name: "cancelled in a step", st: fakeStepper{valid: []int{1, 2, 2, 3}, cancelAt: 2}, kind: endStopped,
			isErr: func(err error) bool {
				return errors.Is(err, context.Canceled) && strings.HasPrefix(err.Error(), "epoch 2: ")
			}, epochs: 2, rows: 2, bestEpoch: 1},
		{name: "step error", st: fakeStepper{valid: []int{1, 2, 2, 3}, fail: map[int]error{1: boom}}, kind: endFailed,
			isErr: func(err error) bool { return errors.Is(err, boom) && err.Error() == "epoch 1: boom" }},
		{name: "observer error", st: fakeStepper{valid: []int{1, 2, 2, 3}}, spyFail: 1, kind: endFailed,
			isErr: func(err error) bool { return err == errSpy }},
		{name: "set-up error", st: fakeStepper{valid: []int{1, 2, 2, 3}}, setupFail: true, kind: -1,
			isErr: func(err error) bool { return errors.Is(err, safefile.ErrLocked) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := testConfig(t, append([]string{"epochs = 4", "checkpoint_every = 1"}, c.train...)...)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			st := c.st
			if st.cancelAt == 0 {
				st.cancelAt = -1
			}
			st.cancel = cancel
			l := testLoop(t, cfg, &st)
			if c.afterStop > 0 {
				l.afterEpoch = func(ep int) {
					if ep == c.afterStop {
						cancel()
					}
				}
			}
			if c.setupFail {
				lock, err := safefile.Acquire(cfg.CSVPath())
				if err != nil {
					t.Fatal(err)
				}
				defer lock.Release()
			}
			s := &spy{failAt: -1}
			if c.spyFail > 0 {
				s.failAt = c.spyFail
			}
			err := l.run(ctx, Options{}, s)
			if c.isErr == nil && err != nil || c.isErr != nil && !c.isErr(err) {
				t.Fatalf("err = %v", err)
			}
			if c.setupFail {
				if s.starts+s.epochs+len(s.ends) != 0 || len(l.releases) != 0 || exists(safefile.LockPath(cfg.LogPath())) {
					t.Errorf("set-up failure: spy saw %+v, %d releases left, log lock left", s, len(l.releases))
				}
				return
			}
			if !slices.Equal(s.ends, []endKind{c.kind}) || s.starts != 1 {
				t.Errorf("spy: %d starts, ends %v, want 1 start and one end %v", s.starts, s.ends, c.kind)
			}
			for _, p := range []string{cfg.CSVPath(), cfg.LogPath(), cfg.CheckpointPath()} {
				if exists(safefile.LockPath(p)) {
					t.Errorf("%s is still locked", p)
				}
			}
			rows := csvRowsOf(t, cfg.CSVPath())
			if c.kind == endFailed {
				if rows != nil || exists(cfg.LogPath()) || exists(cfg.ModelPath()) {
					t.Errorf("a failed run left output.csv, output.log or output.model")
				}
				return
			}
			if len(rows) != 1+c.rows || l.res.Epochs != c.epochs || l.res.BestEpoch != c.bestEpoch {
				t.Errorf("%d csv rows, %d epochs, best epoch %d; want %d rows, %d epochs, best %d",
					len(rows), l.res.Epochs, l.res.BestEpoch, 1+c.rows, c.epochs, c.bestEpoch)
			}
			if lines := strings.Count(string(slurpFile(t, cfg.LogPath())), "\n"); lines != c.rows {
				t.Errorf("output.log has %d lines, want %d", lines, c.rows)
			}
			if exists(cfg.ModelPath()) != (c.kind == endFinished) {
				t.Errorf("output.model written: %v, want %v", exists(cfg.ModelPath()), c.kind == endFinished)
			}
			if l.res.PeakTierBytes["host"] != 64 {
				t.Errorf("the result's peaks were not filled in: %v", l.res.PeakTierBytes)
			}
		})
	}
}

func slurpFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestLoopResume interrupts a run after epoch 1, resumes it from its
// checkpoint, and compares with the uninterrupted run: the same rows in
// output.csv (the times aside) and the same output.model.
func TestLoopResume(t *testing.T) {
	train := []string{"epochs = 5", "checkpoint_every = 2", "eval_every = 2", "patience = 4"}
	valid := []int{1, 2, 2, 3, 3}
	full := testConfig(t, train...)
	if err := testLoop(t, full, &fakeStepper{valid: valid, cancelAt: -1}).run(context.Background(), Options{}); err != nil {
		t.Fatal(err)
	}
	cut := testConfig(t, train...)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l := testLoop(t, cut, &fakeStepper{valid: valid, cancelAt: -1})
	l.afterEpoch = func(ep int) {
		if ep == 2 {
			cancel()
		}
	}
	if err := l.run(ctx, Options{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted: err = %v", err)
	}
	ck, err := readCheckpoint(cut.CheckpointPath(), cut.Train.Epochs)
	if err != nil {
		t.Fatal(err)
	}
	if ck.meta.NextEpoch != 2 || len(ck.meta.Records) != 2 {
		t.Fatalf("checkpoint: next epoch %d, %d records; want 2 and 2", ck.meta.NextEpoch, len(ck.meta.Records))
	}
	l = testLoop(t, cut, &fakeStepper{valid: valid, cancelAt: -1})
	l.ck = ck
	if err := l.run(context.Background(), Options{}); err != nil {
		t.Fatal(err)
	}
	a, b := csvRowsOf(t, full.CSVPath()), csvRowsOf(t, cut.CSVPath())
	for _, rows := range [][][]string{a, b} {
		for _, r := range rows {
			r[1] = "" // time_s
		}
	}
	if !slices.EqualFunc(a, b, slices.Equal) {
		t.Errorf("output.csv\nuninterrupted %q\nresumed       %q", a, b)
	}
	if !slices.Equal(slurpFile(t, full.ModelPath()), slurpFile(t, cut.ModelPath())) {
		t.Errorf("the resumed run saved another output.model")
	}
}

// TestBestModel: the first evaluated epoch is the best, a later one only
// when it validates better (a tie keeps the earlier); patience counts the
// evaluated epochs since the best, eval_every at a time.
func TestBestModel(t *testing.T) {
	for _, c := range []struct {
		name            string
		every, patience int
		valid           []float64 // per epoch; negative: not evaluated
		best            int
		stopAfter       int // the epoch after which it stops (-1: never)
	}{
		{"first is best", 1, 0, []float64{0, 0, 0}, 0, -1},
		{"tie keeps the earlier", 1, 0, []float64{0.5, 0.7, 0.7, 0.6}, 1, -1},
		{"patience 2", 1, 2, []float64{0.5, 0.4, 0.5, 0.9}, 0, 2},
		{"patience reset by a better epoch", 1, 2, []float64{0.5, 0.4, 0.6, 0.6, 0.6}, 2, 4},
		{"unevaluated epochs do not count", 2, 4, []float64{-1, 0.5, -1, 0.4, -1, 0.3, -1}, 1, 5},
		{"patience 0 never stops", 1, 0, []float64{0.9, 0.1, 0.1, 0.1}, 0, -1},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := &Result{BestEpoch: -1}
			b := &bestModel{st: &fakeStepper{}, res: res, every: c.every, patience: c.patience}
			stopAfter := -1
			for ep, va := range c.valid {
				rec := &EpochRecord{Epoch: ep, ValidAcc: va, TrainAcc: 1, TestAcc: va / 2, Evaluated: va >= 0}
				stop, err := b.epoch(context.Background(), rec)
				if err != nil {
					t.Fatal(err)
				}
				if stop {
					stopAfter = ep
					break // the loop runs no further epoch
				}
			}
			if res.BestEpoch != c.best || res.BestValidAcc != c.valid[c.best] || res.TestAcc != c.valid[c.best]/2 || b.params == nil {
				t.Errorf("best epoch %d (valid %v, test %v), want %d", res.BestEpoch, res.BestValidAcc, res.TestAcc, c.best)
			}
			if stopAfter != c.stopAfter {
				t.Errorf("stops after epoch %d, want %d", stopAfter, c.stopAfter)
			}
			if stop, _ := b.start(context.Background()); stop != (c.stopAfter >= 0) {
				t.Errorf("start (as a resume would) stops: %v", stop)
			}
		})
	}
}

// TestCheckpointCadence: a checkpoint follows every train.checkpoint_every
// epochs and the last.
func TestCheckpointCadence(t *testing.T) {
	for _, c := range []struct {
		every, epochs int
		want          []int
	}{
		{1, 3, []int{0, 1, 2}},
		{2, 5, []int{1, 3, 4}},
		{2, 4, []int{1, 3}},
		{5, 3, []int{2}},
	} {
		ck := &checkpointer{every: c.every, epochs: c.epochs}
		var got []int
		for ep := range c.epochs {
			if ck.due(ep) {
				got = append(got, ep)
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("every %d of %d epochs: after %v, want %v", c.every, c.epochs, got, c.want)
		}
	}
}

// TestEnding: what outputs keep and what error a run returns, for each
// kind of end, with and without a failing end hook.
func TestEnding(t *testing.T) {
	cause, hook := errors.New("cause"), errors.New("hook")
	for _, c := range []struct {
		kind           endKind
		cause          error
		errs           []error
		keep, complete bool
		want           string
	}{
		{endFinished, nil, nil, true, true, ""},
		{endFinished, nil, []error{hook}, false, false, "hook"},
		{endStopped, cause, nil, true, false, "cause"},
		{endStopped, cause, []error{hook, hook}, true, false, "cause\nhook\nhook"},
		{endFailed, cause, nil, false, false, "cause"},
		{endFailed, cause, []error{hook}, false, false, "cause"},
	} {
		e := &ending{kind: c.kind, cause: c.cause, errs: c.errs}
		got := ""
		if err := e.err(); err != nil {
			got = err.Error()
		}
		if e.keep() != c.keep || e.complete() != c.complete || got != c.want {
			t.Errorf("%v with %d hook errors: keep %v, complete %v, err %q; want %v, %v, %q",
				c.kind, len(c.errs), e.keep(), e.complete(), got, c.keep, c.complete, c.want)
		}
	}
	if s := strconv.Quote(endStopped.String()); s != `"stopped"` {
		t.Errorf("endStopped.String() = %s", s)
	}
}
