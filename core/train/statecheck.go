package train

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"

	"strata/core/config"
	"strata/core/graph"
)

// checkpointStateVersion is the version of a checkpoint's meta
// (docs/checkpoints.md): 2 records the dataset's identity. A checkpoint
// without a version (1, older strata) still loads, with a warning that
// its dataset cannot be verified; a newer version is refused.
const checkpointStateVersion = 2

// datasetID identifies the data a run trains on, cheaply: the sizes and a
// SHA-256 over the labels (or float targets) and the split indices (another split at the
// same path changes it). A checkpoint records it; --resume compares.
type datasetID struct {
	Source   string `json:"source"`
	Nodes    int    `json:"nodes"`
	Edges    int64  `json:"edges"`
	Features int    `json:"features"`
	Classes  int    `json:"classes"`
	// Targets names float targets ("multi-label", "regression"; "" for
	// classes).
	Targets string `json:"targets,omitempty"`
	SHA256  string `json:"labels_splits_sha256"`
}

// identify computes ds's identity (dim is the width trained on).
func identify(ds *graph.Dataset, dim int) *datasetID {
	h := sha256.New()
	for _, a := range [][]int32{ds.Labels, ds.Train, ds.Valid, ds.Test} {
		hashInt32s(h, a)
	}
	if ds.HasTargets() { // their bits, after the kind
		t := make([]int32, 1, 1+len(ds.Targets))
		t[0] = int32(ds.Kind)
		for _, v := range ds.Targets {
			t = append(t, int32(math.Float32bits(v)))
		}
		hashInt32s(h, t)
	}
	return &datasetID{Source: ds.Source, Nodes: ds.NumNodes, Edges: ds.Graph.NNZ(), Features: dim, Classes: ds.NumClasses,
		Targets: targetsName(ds), SHA256: hex.EncodeToString(h.Sum(nil))}
}

// hashInt32s writes a's length, then its values, little-endian, to h.
func hashInt32s(h io.Writer, a []int32) {
	buf := binary.LittleEndian.AppendUint64(make([]byte, 0, 1<<16), uint64(len(a)))
	for _, v := range a {
		buf = binary.LittleEndian.AppendUint32(buf, uint32(v))
		if len(buf) >= cap(buf)-4 {
			h.Write(buf)
			buf = buf[:0]
		}
	}
	h.Write(buf)
}

// same reports whether two identities are of the same data (the source
// path may differ: a moved dataset is the same data).
func (d *datasetID) same(o *datasetID) bool {
	return d.Nodes == o.Nodes && d.Edges == o.Edges && d.Features == o.Features && d.Classes == o.Classes && d.Targets == o.Targets && d.SHA256 == o.SHA256
}

func (d *datasetID) String() string {
	return fmt.Sprintf("%s (%d nodes, %d edges, %d features, %d classes, labels and splits sha256 %.16s)", d.Source, d.Nodes, d.Edges, d.Features, d.Classes, d.SHA256)
}

// checkpointDataset returns the identity of ds (trained dim wide) for a
// run that writes or resumes checkpoints (nil for any other: it costs a
// pass over the labels), after checking that a resumed checkpoint ck
// was written on the same data.
func checkpointDataset(cfg *config.Config, ck *checkpoint, ds *graph.Dataset, dim int, warn io.Writer) (*datasetID, error) {
	if ck == nil && (cfg.Train.CheckpointEvery <= 0 || cfg.CheckpointPath() == "") {
		return nil, nil
	}
	id := identify(ds, dim)
	if ck != nil {
		if err := checkResumeDataset(cfg.CheckpointPath(), ck, id, warn); err != nil {
			return nil, err
		}
	}
	return id, nil
}

// checkResumeDataset compares the dataset a checkpoint was written on
// with the one the resumed run loaded. A checkpoint of state version 1
// carries none: warn is told that it cannot be verified.
func checkResumeDataset(path string, ck *checkpoint, now *datasetID, warn io.Writer) error {
	was := ck.meta.Dataset
	if was == nil {
		if warn != nil {
			fmt.Fprintf(warn, "strata: warning: --resume: %s was written by an older strata and records no dataset identity: the dataset %s cannot be verified to be the one the run started on\n", path, now.Source)
		}
		return nil
	}
	if !was.same(now) {
		return fmt.Errorf("--resume: %s was written by a run on dataset %s, and data.dataset is now %s: the data changed (another split, other labels or another graph); resume with the dataset the run started with, or start afresh without --resume", path, was, now)
	}
	return nil
}

// stateError is an impossible value in a checkpoint or model file whose
// checksum is valid (the file was edited, or not written by strata).
func stateError(path, kind, field string, format string, args ...any) error {
	return fmt.Errorf("%s: not a valid strata %s file: %s %s; it was not written by a strata run: use the %s file the run wrote, or start afresh", path, kind, field, fmt.Sprintf(format, args...), kind)
}

// checkAccuracies refuses an accuracy outside [0, 1] (0 stands for an
// absent one: no evaluation yet, or an empty split).
func checkAccuracies(path, kind, targets string, accs map[string]float64) error {
	for _, name := range slices.Sorted(maps.Keys(accs)) {
		v := accs[name]
		if targets == regressionTargets {
			if !(v <= 1) || math.IsInf(v, 0) {
				return stateError(path, kind, name, "= %v is not an R² (finite, at most 1)", v)
			}
		} else if !(v >= 0 && v <= 1) {
			return stateError(path, kind, name, "= %v is not an accuracy in [0, 1]", v)
		}
	}
	return nil
}

// checkFiniteArrays refuses a non-finite value in any array (parameters,
// batch-norm statistics, optimizer state).
func checkFiniteArrays(path, kind string, arrays map[string][]float64) error {
	for _, name := range slices.Sorted(maps.Keys(arrays)) {
		for i, v := range arrays[name] {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return stateError(path, kind, "array "+name, "[%d] = %v is not finite", i, v)
			}
		}
	}
	return nil
}

// check validates a checkpoint's meaning for a run of epochs epochs:
// its state version, the epochs (next_epoch in [1, epochs], best_epoch
// before it, the records in order), the accuracies and the arrays.
func (c *checkpoint) check(path string, epochs int) error {
	m := &c.meta
	bad := func(field, format string, args ...any) error {
		return stateError(path, "checkpoint", field, format, args...)
	}
	switch {
	case m.StateVersion > checkpointStateVersion:
		return fmt.Errorf("%s: checkpoint state version %d, this strata reads versions up to %d: resume with the strata that wrote it, or start afresh without --resume", path, m.StateVersion, checkpointStateVersion)
	case m.NextEpoch < 1 || m.NextEpoch > epochs:
		return bad("next_epoch", "= %d is outside [1, %d] (train.epochs)", m.NextEpoch, epochs)
	case m.BestEpoch < -1 || m.BestEpoch >= m.NextEpoch:
		return bad("best_epoch", "= %d is outside [-1, %d] (next_epoch - 1)", m.BestEpoch, m.NextEpoch-1)
	case m.HasBest != (m.BestEpoch >= 0):
		return bad("has_best", "= %v with best_epoch = %d", m.HasBest, m.BestEpoch)
	case m.SinceBest < 0:
		return bad("since_best", "= %d is negative", m.SinceBest)
	case m.OptimizerStep < 0:
		return bad("optimizer_step", "= %d is negative", m.OptimizerStep)
	case len(m.Records) > m.NextEpoch || len(m.TimesS) > m.NextEpoch || len(m.EvalTimesS) > m.NextEpoch || len(m.PredictedS) > m.NextEpoch:
		return bad("records", "and times hold more epochs than next_epoch = %d", m.NextEpoch)
	}
	for i, r := range m.Records {
		if r.Epoch != i {
			return bad("records", "[%d] is epoch %d", i, r.Epoch)
		}
	}
	targets := ""
	if m.Dataset != nil {
		targets = m.Dataset.Targets
	}
	if err := checkAccuracies(path, "checkpoint", targets, map[string]float64{"best_valid_acc": m.BestValidAcc, "train_acc": m.TrainAcc, "test_acc": m.TestAcc}); err != nil {
		return err
	}
	if m.HasBest {
		for name, v := range c.arrays {
			if rest, ok := strings.CutPrefix(name, "param/"); ok && len(c.arrays["best/"+rest]) != len(v) {
				return bad("array best/"+rest, "is missing or not the size of param/%s", rest)
			}
		}
	}
	return checkFiniteArrays(path, "checkpoint", c.arrays)
}

// check validates a model's meaning: its widths, its best epoch and
// accuracy, and the arrays.
func (m *ModelMeta) check(path string, arrays map[string][]float64) error {
	bad := func(field, format string, args ...any) error {
		return stateError(path, "model", field, format, args...)
	}
	switch {
	case m.Features < 1:
		return bad("features", "= %d is not a width", m.Features)
	case m.Classes < 2 && m.Targets == "":
		return bad("classes", "= %d: a classifier has at least 2", m.Classes)
	case m.Classes < 1:
		return bad("classes", "= %d: a model has at least 1 output", m.Classes)
	case m.Params < 0:
		return bad("params", "= %d is negative", m.Params)
	case m.BestEpoch < -1:
		return bad("best_epoch", "= %d is negative", m.BestEpoch)
	}
	if err := checkAccuracies(path, "model", m.Targets, map[string]float64{"best_valid_acc": m.BestValidAcc}); err != nil {
		return err
	}
	return checkFiniteArrays(path, "model", arrays)
}
