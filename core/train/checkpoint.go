package train

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"slices"
	"strings"

	"strata/core/backend"
	"strata/core/safefile"
)

// The array file format of checkpoints (output.checkpoint) and saved
// models (output.model), see docs/checkpoints.md:
//
//	magic    8 bytes  "STRATAAF"
//	version  uint32   little-endian, 1
//	hlen     uint32   little-endian, length of the header
//	header   hlen bytes of JSON: {"kind", "meta", "arrays": [{"name", "len"}]}
//	arrays   the arrays in header order, float64 little-endian
//	sum      32 bytes, SHA-256 of everything before it
const (
	arrayMagic   = "STRATAAF"
	arrayVersion = 1
	maxHeader    = 64 << 20
)

type arrayHeader struct {
	Name string `json:"name"`
	Len  int64  `json:"len"`
}

type fileHeader struct {
	Kind   string          `json:"kind"`
	Meta   json.RawMessage `json:"meta"`
	Arrays []arrayHeader   `json:"arrays"`
}

// writeArrays writes kind's meta and arrays (sorted by name) to path
// atomically and durably (safefile: temporary file, fsync, rename,
// directory fsync).
func writeArrays(path, kind string, meta any, arrays map[string][]float64, inputs ...string) error {
	mb, err := json.Marshal(meta)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(arrays))
	for k := range arrays {
		names = append(names, k)
	}
	slices.Sort(names)
	h := fileHeader{Kind: kind, Meta: mb}
	for _, n := range names {
		h.Arrays = append(h.Arrays, arrayHeader{Name: n, Len: int64(len(arrays[n]))})
	}
	hb, err := json.Marshal(h)
	if err != nil {
		return err
	}
	return safefile.Write(path, func(w io.Writer) error {
		sum := sha256.New()
		mw := io.MultiWriter(w, sum)
		var pre [16]byte
		copy(pre[:], arrayMagic)
		binary.LittleEndian.PutUint32(pre[8:], arrayVersion)
		binary.LittleEndian.PutUint32(pre[12:], uint32(len(hb)))
		if _, err := mw.Write(pre[:]); err != nil {
			return err
		}
		if _, err := mw.Write(hb); err != nil {
			return err
		}
		buf := make([]byte, 0, 1<<16)
		for _, n := range names {
			for _, v := range arrays[n] {
				buf = binary.LittleEndian.AppendUint64(buf, math.Float64bits(v))
				if len(buf) == cap(buf) {
					if _, err := mw.Write(buf); err != nil {
						return err
					}
					buf = buf[:0]
				}
			}
		}
		if _, err := mw.Write(buf); err != nil {
			return err
		}
		_, err := w.Write(sum.Sum(nil))
		return err
	}, inputs...)
}

// readArrays reads a file written by writeArrays of the given kind,
// decoding its meta into meta. Every length is checked against the file's
// size before anything is allocated, and the checksum before the data is
// used.
func readArrays(path, kind string, meta any) (map[string][]float64, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%s: not a valid strata %s file: %s", path, kind, fmt.Sprintf(format, args...))
	}
	f, st, err := safefile.Open(path) // a FIFO would block the open
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: no such %s file", path, kind)
		}
		if errors.Is(err, safefile.ErrNotRegular) {
			return nil, fmt.Errorf("%w: give the %s file a strata run wrote", err, kind)
		}
		return nil, err
	}
	defer f.Close()
	size := st.Size()
	if size < 16+32 {
		return nil, bad("%d bytes is too short", size)
	}
	var pre [16]byte
	if _, err := io.ReadFull(f, pre[:]); err != nil {
		return nil, err
	}
	if string(pre[:8]) != arrayMagic {
		return nil, bad("wrong magic %q", pre[:8])
	}
	if v := binary.LittleEndian.Uint32(pre[8:]); v != arrayVersion {
		return nil, bad("format version %d, this strata reads version %d", v, arrayVersion)
	}
	hlen := int64(binary.LittleEndian.Uint32(pre[12:]))
	if hlen > maxHeader || 16+hlen+32 > size {
		return nil, bad("header length %d does not fit the file's %d bytes", hlen, size)
	}
	sum := sha256.New()
	sum.Write(pre[:])
	hb := make([]byte, hlen)
	if _, err := io.ReadFull(f, hb); err != nil {
		return nil, err
	}
	sum.Write(hb)
	var h fileHeader
	dec := json.NewDecoder(bytes.NewReader(hb))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&h); err != nil {
		return nil, bad("header: %v", err)
	}
	if h.Kind != kind {
		return nil, fmt.Errorf("%s: a strata %s file, not a %s file", path, h.Kind, kind)
	}
	data := size - 16 - hlen - 32
	var total int64
	for _, a := range h.Arrays {
		if a.Len < 0 || a.Len > data/8 || total+a.Len*8 > data {
			return nil, bad("array %q of %d values does not fit the file", a.Name, a.Len)
		}
		total += a.Len * 8
	}
	if total != data {
		return nil, bad("the arrays take %d bytes, the file holds %d", total, data)
	}
	out := make(map[string][]float64, len(h.Arrays))
	r := io.TeeReader(f, sum)
	buf := make([]byte, 1<<16)
	for _, a := range h.Arrays {
		if _, dup := out[a.Name]; dup {
			return nil, bad("array %q twice", a.Name)
		}
		v := make([]float64, a.Len)
		for i := int64(0); i < a.Len; {
			n := min(int64(len(buf))/8, a.Len-i)
			if _, err := io.ReadFull(r, buf[:n*8]); err != nil {
				return nil, err
			}
			for k := int64(0); k < n; k++ {
				v[i+k] = math.Float64frombits(binary.LittleEndian.Uint64(buf[k*8:]))
			}
			i += n
		}
		out[a.Name] = v
	}
	var want [32]byte
	if _, err := io.ReadFull(f, want[:]); err != nil {
		return nil, err
	}
	if !bytes.Equal(sum.Sum(nil), want[:]) {
		return nil, bad("checksum mismatch (the file is corrupt or truncated)")
	}
	if err := json.Unmarshal(h.Meta, meta); err != nil {
		return nil, bad("meta: %v", err)
	}
	return out, nil
}

// prefixed returns the arrays of m whose names start with prefix, with
// the prefix removed.
func prefixed(m map[string][]float64, prefix string) map[string][]float64 {
	out := map[string][]float64{}
	for k, v := range m {
		if rest, ok := strings.CutPrefix(k, prefix); ok {
			out[rest] = v
		}
	}
	return out
}

// addPrefixed adds src to dst under prefix.
func addPrefixed(dst map[string][]float64, prefix string, src map[string][]float64) {
	for k, v := range src {
		dst[prefix+k] = v
	}
}

// checkpointMeta is a checkpoint's scalar state. Randomness in strata is a
// pure function of train.seed and the epoch (an epoch's streams are seeded
// with seed*1000003+epoch), so the RNG state is Seed and NextEpoch.
type checkpointMeta struct {
	// StateVersion is checkpointStateVersion (absent, 0: version 1, which
	// records no Dataset).
	StateVersion      int                `json:"state_version,omitempty"`
	Dataset           *datasetID         `json:"dataset,omitempty"`
	ConfigSHA256      string             `json:"config_sha256"`
	ModuleSHA256      string             `json:"module_sha256"`
	Model             string             `json:"model"`
	Seed              int64              `json:"seed"`
	NextEpoch         int                `json:"next_epoch"`
	BestEpoch         int                `json:"best_epoch"`
	BestValidAcc      float64            `json:"best_valid_acc"`
	TrainAcc          float64            `json:"train_acc"`
	TestAcc           float64            `json:"test_acc"`
	FinalLoss         float64            `json:"final_loss"`
	SinceBest         int                `json:"since_best"`
	HasBest           bool               `json:"has_best"`
	Optimizer         string             `json:"optimizer"`
	OptimizerStep     int                `json:"optimizer_step"`
	TimesS            []float64          `json:"times_s"`
	EvalTimesS        []float64          `json:"eval_times_s"`
	PredictedS        []float64          `json:"predicted_s"`
	PredictedComputeS map[string]float64 `json:"predicted_compute_s"`
	// Records are the epochs' records so far, for output.csv and
	// output.log of the resumed run; Traffic and TrafficByPurpose are the
	// link counters as the uninterrupted run has them (simulated devices).
	Records          []EpochRecord         `json:"records"`
	Traffic          []backend.LinkTraffic `json:"traffic,omitempty"`
	TrafficByPurpose map[string]int64      `json:"traffic_by_purpose,omitempty"`
	// UnrecordedTransferBytes crossed the links after the last record
	// (the checkpoint's own downloads): the next record includes them.
	UnrecordedTransferBytes int64 `json:"unrecorded_transfer_bytes,omitempty"`
	// The run's peak bytes per tier so far: all phases, training, evaluation.
	PeakBytes      map[string]int64 `json:"peak_bytes,omitempty"`
	TrainPeakBytes map[string]int64 `json:"train_peak_bytes,omitempty"`
	EvalPeakBytes  map[string]int64 `json:"eval_peak_bytes,omitempty"`
}

// checkpoint is a checkpoint's whole content: arrays are "param/<name>",
// "state/<key>" (batch-norm statistics), "best/<name>" (the best-validation
// parameters) and "opt/<buffer>/<name>" (the optimizer's buffers).
type checkpoint struct {
	meta   checkpointMeta
	arrays map[string][]float64
}

// readCheckpoint reads the checkpoint at path of a run of epochs epochs
// and checks its meaning (see checkpoint.check).
func readCheckpoint(path string, epochs int) (*checkpoint, error) {
	var c checkpoint
	var err error
	if c.arrays, err = readArrays(path, "checkpoint", &c.meta); err != nil {
		return nil, err
	}
	if err := c.check(path, epochs); err != nil {
		return nil, err
	}
	return &c, nil
}

// ModelMeta describes a saved model (output.model).
type ModelMeta struct {
	ConfigSHA256 string  `json:"config_sha256"`
	Config       string  `json:"config"` // the canonical config text
	ModuleSHA256 string  `json:"module_sha256"`
	Model        string  `json:"model"`
	Features     int     `json:"features"`
	Classes      int     `json:"classes"`
	Params       int64   `json:"params"`
	BestEpoch    int     `json:"best_epoch"`
	BestValidAcc float64 `json:"best_valid_acc"`
	// FeatureNorm is what data.feature_norm did to the training data
	// ("row" or "none": "auto" resolved); empty in files of older strata
	// and where the ranks of a distributed run normalised their own rows.
	FeatureNorm string `json:"feature_norm,omitempty"`
	// Modules holds the SHA-256 of every aggregator module the model
	// loaded, by identity key (model.options.<k> for a module file,
	// model.aggregators.<name> for a registered one).
	Modules map[string]string `json:"modules,omitempty"`
	// Paths holds the files the run built the model from (data.dataset,
	// model.module, model.options.<k>) as it resolved them: relative to
	// the directory it ran in, or absolute. predict without -c reads
	// them relative to its own working directory.
	Paths map[string]string `json:"paths,omitempty"`
	// ModelSHA256 is the SHA-256 of the model's Identity, checked when
	// the file is read; absent in files of older strata.
	ModelSHA256 string `json:"model_sha256,omitempty"`
	// Targets names the float targets the model predicts ("multi-label",
	// "regression"; "" for classes): its outputs are then scores or
	// values, and best_valid_acc for regression is an R².
	Targets string `json:"targets,omitempty"`
}

// ReadModel reads a model file written by output.model: its meta and its
// arrays ("param/<name>", "state/<key>"), checked for meaning (widths,
// accuracy, finite values).
func ReadModel(path string) (*ModelMeta, map[string][]float64, error) {
	var m ModelMeta
	arrays, err := readArrays(path, "model", &m)
	if err != nil {
		return nil, nil, err
	}
	if err := m.check(path, arrays); err != nil {
		return nil, nil, err
	}
	if err := m.checkSHA(path); err != nil {
		return nil, nil, err
	}
	return &m, arrays, nil
}
