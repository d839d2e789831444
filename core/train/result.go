// Package train runs the full-graph training loop: data preparation, model
// construction from layer modules, forward, loss, backward, optimizer steps,
// evaluation and metrics.
package train

import (
	"maps"
	"slices"
	"strings"

	"strata/core/backend"
)

// EpochRecord is one line of the per-epoch metrics.
type EpochRecord struct {
	Epoch     int              `json:"epoch"`
	TimeS     float64          `json:"time_s"`
	Loss      float64          `json:"loss"`
	TrainAcc  float64          `json:"train_acc"`
	ValidAcc  float64          `json:"valid_acc"`
	TestAcc   float64          `json:"test_acc"`
	Evaluated bool             `json:"evaluated"`
	PeakBytes map[string]int64 `json:"peak_bytes"`
	// Mini-batch stages of the epoch and the device cache's hit rate.
	SampleS  float64 `json:"sample_s"`
	ExtractS float64 `json:"extract_s"`
	StageS   float64 `json:"stage_s"` // moving batches to the devices
	TrainS   float64 `json:"train_s"`
	// TransferBytes crossed the simulated links since the previous record
	// (the first record includes the set-up: parameters, cached rows).
	TransferBytes int64 `json:"transfer_bytes"`
	// PredictedS is, on simulated devices, the epoch's training time that
	// the cost model and link bandwidths predict for the simulated machine.
	PredictedS float64 `json:"predicted_s,omitempty"`
	// Extra holds the stepper's own columns (see Columner), by name.
	Extra map[string]string `json:"extra,omitempty"`
	// Metrics are an evaluated epoch's figures beyond the accuracies:
	// valid_loss (from a train.Scorer's logits) and valid_<m>, test_<m>
	// of train.metrics (docs/outputs.md).
	Metrics map[string]float64 `json:"metrics,omitempty"`
}

// Result is the final machine-readable summary of a run (one JSON line).
type Result struct {
	// Status is "diverged" for a run stopped by a non-finite loss or
	// parameter (see DivergedError), "interrupted" for one stopped by
	// SIGINT, "failed" for one whose output.checkpoint or output.model
	// could not be written (see OutputError), empty for a finished run.
	Status  string `json:"status,omitempty"`
	Dataset string `json:"dataset"`
	Model   string `json:"model"`
	Mode    string `json:"mode"`
	Backend string `json:"backend"`
	Device  string `json:"device,omitempty"` // the GPU's name (cuda backend)
	// Targets names the dataset's targets when they are not classes:
	// "multi-label" (the *_acc fields are then the element-wise
	// accuracy) or "regression" (the *_acc fields are then R²).
	Targets      string  `json:"targets,omitempty"`
	Epochs       int     `json:"epochs"`
	BestEpoch    int     `json:"best_epoch"`
	BestValidAcc float64 `json:"best_valid_acc"`
	TrainAcc     float64 `json:"train_acc"`
	TestAcc      float64 `json:"test_acc"`
	// Metrics are the best epoch's valid_<m> and test_<m> of each metric
	// of train.metrics but accuracy; absent unless it names one.
	Metrics          map[string]float64 `json:"metrics,omitempty"`
	FinalLoss        float64            `json:"final_loss"`
	EpochTimeMedianS float64            `json:"epoch_time_median_s"`
	EvalTimeMedianS  float64            `json:"eval_time_median_s"`
	LoadTimeS        float64            `json:"load_time_s"`
	Nodes            int                `json:"nodes"`
	Edges            int64              `json:"edges"`
	Features         int                `json:"features"`
	Classes          int                `json:"classes"`
	Params           int64              `json:"params"`
	PeakRSSBytes     int64              `json:"peak_rss_bytes"`
	// LoadPeakRSSBytes is the peak resident memory before the first epoch
	// (dataset loaded, stepper bound); ProgramBytes what the engine's
	// program holds for a training step by its own accounting (values,
	// gradients, masks, scratch; see engine.Program.Allocated), where the
	// strategy reports it (strategy.fullgraph does).
	LoadPeakRSSBytes int64 `json:"load_peak_rss_bytes,omitempty"`
	// TrainPeakRSSBytes is the peak resident memory when the first
	// evaluation starts: loading and the training epochs before it (every
	// epoch with train.eval_every = 0), without what evaluation holds.
	TrainPeakRSSBytes int64 `json:"train_peak_rss_bytes,omitempty"`
	ProgramBytes      int64 `json:"program_bytes,omitempty"`
	// FeatureDType and FeatureBytes: the storage of the host feature
	// matrix and its bytes, reported for 16-bit storage
	// (data.feature_dtype; float32 rows would take twice FeatureBytes).
	FeatureDType  string           `json:"feature_dtype,omitempty"`
	FeatureBytes  int64            `json:"feature_bytes,omitempty"`
	PeakTierBytes map[string]int64 `json:"peak_tier_bytes"`
	// TrainPeakTierBytes is the peak during training steps only (what a
	// step's micro-batches need), EvalPeakTierBytes during evaluations;
	// PeakTierBytes also covers set-up.
	TrainPeakTierBytes map[string]int64 `json:"train_peak_tier_bytes,omitempty"`
	EvalPeakTierBytes  map[string]int64 `json:"eval_peak_tier_bytes,omitempty"`
	// EstimatedPeakBytes is the strategy's own estimate of a training
	// step's peak device memory (its largest part), where it makes one;
	// Partitioner is the partitioner module that split the work.
	EstimatedPeakBytes int64  `json:"estimated_peak_bytes,omitempty"`
	Partitioner        string `json:"partitioner,omitempty"`
	// Mini-batch stages of the last epoch, in seconds: sampling and
	// feature extraction run ahead of training and overlap with it.
	SampleTimeS  float64 `json:"sample_time_s,omitempty"`
	ExtractTimeS float64 `json:"extract_time_s,omitempty"`
	StageTimeS   float64 `json:"stage_time_s,omitempty"` // gathering from the feature store and uploading batches
	TrainTimeS   float64 `json:"train_time_s,omitempty"`
	// Traffic is, on simulated devices, the bytes that crossed each link
	// and the time the link bandwidths predict for them; TransferTimeS is
	// their sum (the busy time of all links; the predicted times take the
	// critical path of links running in parallel).
	Traffic       []backend.LinkTraffic `json:"traffic,omitempty"`
	TransferTimeS float64               `json:"transfer_time_s,omitempty"`
	// TrafficByPurpose splits the same bytes by what they carried
	// (features, topology, labels, parameters, activations; inference:
	// layer-wise evaluation's transfers).
	TrafficByPurpose map[string]int64 `json:"traffic_by_purpose,omitempty"`
	// PredictedEpochS is, on simulated devices, the median epoch training
	// time predicted for the simulated machine: kernel times from
	// devices.cost_model, transfer times from the link bandwidths, and
	// the overlap of the mini-batch pipeline (minibatch.overlap).
	// PredictedComputeS is each device's predicted kernel time in the
	// last epoch.
	PredictedEpochS   float64            `json:"predicted_epoch_s,omitempty"`
	PredictedComputeS map[string]float64 `json:"predicted_compute_s,omitempty"`
	// Link describes a link task's split and its training throughput
	// (train.task = "link"); nil otherwise.
	Link *LinkFigures `json:"link,omitempty"`
	// Figures are the strategy's own figures: each a typed sub-object of
	// the result line under the name of the strategy that reports it
	// ("chunked": {...}), set with SetFigures; see FigureDeclarer.
	Figures      map[string]any `json:"-"`
	Threads      int            `json:"threads"`
	Seed         int64          `json:"seed"`
	ConfigSHA256 string         `json:"config_sha256"`
	Version      string         `json:"version"`

	// noValid and noTest mark an empty split: its accuracy is absent
	// (JSON null), not 0.
	noValid, noTest bool
	// alreadyFinished: --resume found a checkpoint of a finished run.
	alreadyFinished bool
}

// AlreadyFinished reports whether the run was resumed (--resume) from
// the checkpoint of a run that had finished (every epoch, or early
// stopping): its result is the finished run's, printed again.
func (r *Result) AlreadyFinished() bool { return r.alreadyFinished }

// SetFigures sets the figures a strategy reports under its name.
func (r *Result) SetFigures(name string, figures any) {
	if r.Figures == nil {
		r.Figures = map[string]any{}
	}
	r.Figures[name] = figures
}

// Summaries joins what the strategies' figures add to the text result
// line (see Summarizer), in name order, each after "; ".
func (r *Result) Summaries() string {
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(r.Figures)) {
		if s, ok := r.Figures[name].(Summarizer); ok {
			if text := s.Summary(); text != "" {
				b.WriteString("; " + text)
			}
		}
	}
	return b.String()
}
