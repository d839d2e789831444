// Package config parses strata's TOML experiment configs strictly.
//
// Every key of a config is declared by the structs below: their `toml` tag
// is the key, and the other tags are the schema that the loader enforces
// and `strata config explain` prints:
//
//	doc:"..."        one line of documentation
//	enum:"a,b"       the allowed string values
//	range:"[lo,hi)"  the allowed numeric interval (either end may be open
//	                 or missing: "[1,)", "(0,)", "[0,1)")
//	special:"v:what" one value outside the range that is also allowed
//	word:"w:v:what"  a string an integer key also takes, stored as the
//	                 integer v outside the range ("auto" for
//	                 train.micro_batches)
//	required:"true"  the key must be present and not empty
//	example:"..."    a value for explain to show for a required key (for
//	                 a table or array key, TOML text, also shown when the
//	                 value has the wrong type)
//
// The defaults live in one place, Default, which both Parse and Explain
// use. Plugin sections ([sampler], [cache], [partition]) name a module of
// the plugin registry; the other keys of the section are decoded into that
// module's own config struct with the same strict rules, then checked by
// its Validate method; a run provisions the modules once and cleans them
// up at its end (Config.Provision, registry.Lifecycle).
//
// Errors name the file and line (or the --set override), the key path, the
// expected type or allowed values and, for a misspelt key, the closest
// valid one. Parse reports all the errors it finds, one per line.
//
// DecodeStrict is the same decoder for any tagged struct; experiment
// files (experiments/runner) are decoded with it.
package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/BurntSushi/toml"

	"strata/core/registry"
	"strata/core/safefile"
)

// Config is a whole experiment config.
type Config struct {
	// Path is the config file the config was read from ("" when parsed
	// from memory without a name); relative paths in the config are
	// relative to its directory.
	Path      string  `toml:"-"`
	Data      Data    `toml:"data" doc:"the dataset and how it is prepared"`
	Model     Model   `toml:"model" doc:"the GNN: a layer module and its sizes"`
	Train     Train   `toml:"train" doc:"the training loop"`
	Sampler   Plugin  `toml:"sampler" ns:"sampler" doc:"neighbourhood sampler of the strategies that sample batches (train.mode; the others refuse it)"`
	Cache     Plugin  `toml:"cache" ns:"cache" doc:"feature-cache policy of the strategies that read features through a cache (train.mode; the others refuse it)"`
	Negative  Plugin  `toml:"negative" ns:"negative" hash:"omitempty" doc:"negative sampler of link prediction (train.task = \"link\"): how the non-edges a training step scores against each positive edge are drawn (strata list-plugins; absent = the default, uniform)"`
	Link      Link    `toml:"link" hash:"omitempty" doc:"link prediction (train.task = \"link\"): the decoder that scores a pair from its endpoints' embeddings, the negatives and the loss; see docs/link-prediction.md"`
	Partition Plugin  `toml:"partition" ns:"partitioner" doc:"graph partitioner, for the strategies that split work with one: each step's output nodes into parts, or the graph among the ranks of a distributed run (see the strategy's options below)"`
	Placement Plugin  `toml:"placement" ns:"placement" doc:"how the cached feature partitions are placed on several simulated devices (a placement solver: strata list-plugins); without it hot rows are interleaved"`
	Devices   Devices `toml:"devices" doc:"the simulated devices (train.backend = \"sim\"): topology and capacity"`
	Output    Output  `toml:"output" hash:"-" doc:"what a run prints and writes (not part of config_sha256)"`
	// Strategy is the strategy train.mode names, decoded from its own
	// top-level section (named after it, see strategy.go) and validated;
	// its Module is nil only for a Config not made by Parse.
	Strategy Plugin `toml:"-"`

	src  *source             // key positions, for KeyError
	life *registry.Lifecycle // the plugin modules' lifecycle (Provision, Cleanup)
}

// Data selects the dataset.
type Data struct {
	Dataset       string `toml:"dataset" required:"true" example:"embedded:cora" docmodules:"format" doc:"the dataset, in any registered format (format.* modules, listed below and by strata list-plugins), optionally followed by @<split>; a relative path is relative to the config file (to the working directory when given with --set)"`
	Symmetrize    bool   `toml:"symmetrize" doc:"add the reverse of every edge (train on the undirected graph)"`
	FeatureNorm   string `toml:"feature_norm" enum:"auto,none,row" doc:"feature normalisation: row = divide each row by its sum, auto = row for 0/1 (bag-of-words) features, none otherwise"`
	Split         string `toml:"split" hash:"omitempty" example:"random-20-30-seed0" doc:"the split to train on: a named split of an OGB directory (its split/<name>), or a generated one, random-<train>-<valid>-seed<k> = per class <train> training and <valid> validation nodes drawn with seed k, every other labeled node for test (Shchur et al.'s protocol; replaces the dataset's own split); \"\" = the dataset's own split. Same as appending @<split> to data.dataset"`
	SynthFeatures int    `toml:"synth_features" range:"[0,65536]" doc:"for datasets without features: random features of this width (0 = error instead)"`
	Reorder       string `toml:"reorder" enum:"none,degree,score" doc:"relabel the nodes before training: degree = by descending degree; score = by the [cache] policy's ranking, hottest first, in parallel (data tiering Alg. 2), so the hot rows are a prefix and the feature store needs no lookup map"`
	EdgeSplit     string `toml:"edge_split" hash:"omitempty" example:"random-85-5-10" doc:"link prediction's split of the edges (train.task = \"link\"): random-<train>-<valid>-<test>[-seed<k>] = those percentages of the edges (an edge and its reverse once, on an undirected graph) for training, validation and test, shuffled with seed k (default: train.seed); validation and test edges and their reverses are removed from the graph that message passing sees, and their negatives are drawn once from the seed; or a split the dataset ships: a name = its directory's split_edge/<name>/, a path (with a / or ending in .npz) = a directory of (E, 2) .npy pairs or a .npz file (train, valid, test, valid_neg, test_neg, train_eval, train_eval_neg; strata split-edges writes one; docs/datasets.md). \"\" = random-85-5-10"`
	FeatureDType  string `toml:"feature_dtype" hash:"omitempty" enum:",float32,float16,bfloat16" doc:"storage of the feature rows: float32 (\"\", the default), or 16 bits in half the bytes, float16 (IEEE binary16, 3 significant digits, |x| up to 65504) or bfloat16 (float32's range, 2 digits), rounded to nearest even once after feature_norm and widened to float32 where a kernel reads them: all math stays float32 (train.dtype = \"float32\"). Strategies and backends that cannot read 16-bit rows reject it; see docs/datasets.md, \"Feature storage\""`
}

// FeatureStorage returns data.feature_dtype with its default spelled
// out: "float32", "float16" or "bfloat16".
func (d *Data) FeatureStorage() string {
	if d.FeatureDType == "" {
		return "float32"
	}
	return d.FeatureDType
}

// Model describes the GNN.
type Model struct {
	Name         string         `toml:"name" doc:"layer module, registry ID model.<name> (see strata list-plugins)"`
	Module       string         `toml:"module" doc:"path to a .wasm layer module; overrides name (relative like data.dataset)"`
	Layers       int            `toml:"layers" range:"[1,64]" doc:"number of GNN layers"`
	Hidden       int            `toml:"hidden" range:"[1,65536]" doc:"hidden width (per head for attention models)"`
	Dropout      float64        `toml:"dropout" range:"[0,1)" doc:"dropout rate between layers"`
	InputDropout float64        `toml:"input_dropout" range:"[0,1)" special:"-1:same as model.dropout" doc:"dropout rate on the input features"`
	Residual     bool           `toml:"residual" hash:"omitempty" doc:"add every layer's input to its output (through a learned linear map, l<i>.residual.weight, where the widths differ), around any layer module"`
	JK           string         `toml:"jk" hash:"omitempty" enum:",cat,max,lstm" doc:"jumping knowledge (Xu et al. 2018, PyG's JumpingKnowledge): combine every layer's output (each layer then ends in its activation, model.hidden wide) by concatenation, elementwise maximum or a bi-directional LSTM's attention over the layers, then a linear classifier (jk.lin); \"\" = off"`
	Options      map[string]any `toml:"options" docmodules:"aggregator" doc:"extra settings passed to the layer module (integers, floats, booleans and strings), e.g. heads = 8 or aggr = \"powermean\"; a string ending in .wasm names a module file (an aggregator), relative like model.module"`
}

// Link configures link prediction (train.task = "link").
type Link struct {
	Decoder        string         `toml:"decoder" docmodules:"decoder" doc:"the decoder that scores a pair (u, v) from the embeddings of u and v: a registered decoder.<name> module (listed below and by strata list-plugins), or a path to a .wasm decoder module (relative like data.dataset)"`
	DecoderOptions map[string]any `toml:"decoder_options" doc:"settings passed to the decoder module (integers, floats, booleans and strings), e.g. hidden = 64 for hadamard-mlp"`
	Embedding      int            `toml:"embedding" range:"[0,65536]" doc:"width of the node embeddings, the last layer's output (0 = model.hidden)"`
	Negatives      int            `toml:"negatives" range:"[1,1000]" doc:"negative pairs drawn per positive training edge at every step, by the [negative] sampler"`
	Exclude        string         `toml:"exclude" enum:"batch,none" doc:"what a mini-batch of edges takes out of its sampled neighbourhoods: batch = its own training edges and their reverses (DGL's exclude=\"reverse_id\"), so that no positive is predicted from a message along itself; none = nothing, as full-graph training, whose graph holds every training edge (PyG's LinkNeighborLoader). Full-graph training ignores it"`
	Loss           string         `toml:"loss" enum:"bce,margin" doc:"bce = binary cross-entropy on the scores (logits) of the positives (target 1) and negatives (target 0), averaged over all of them; margin = max(0, margin - s(positive) + s(negative)) averaged over each positive and its negatives (PyTorch's MarginRankingLoss)"`
	Margin         float64        `toml:"margin" range:"(0,)" doc:"the margin of link.loss = \"margin\""`
}

// IsDefault implements defaulter: a [link] left at its defaults is out
// of the hash.
func (l Link) IsDefault() bool {
	d := Default().Link
	return l.Decoder == d.Decoder && len(l.DecoderOptions) == 0 && l.Embedding == d.Embedding && l.Negatives == d.Negatives && l.Exclude == d.Exclude && l.Loss == d.Loss && l.Margin == d.Margin
}

// Train configures the training loop.
type Train struct {
	Mode            string             `toml:"mode" modules:"strategy" doc:"training strategy, registry ID strategy.<mode> (what each does, and the default: strata list-plugins); a strategy with options of its own reads them from its section, [<mode>]"`
	Epochs          int                `toml:"epochs" range:"[1,10000000]" doc:"number of training epochs"`
	Optimizer       string             `toml:"optimizer" modules:"optimizer" doc:"optimizer, registry ID optimizer.<name>: adam, adamw (decoupled weight decay) or sgd (strata list-plugins)"`
	LR              float64            `toml:"lr" range:"(0,)" doc:"learning rate (the base rate of [train.lr_schedule])"`
	LRSchedule      Plugin             `toml:"lr_schedule" ns:"lrschedule" doc:"learning-rate schedule, stepped once per epoch (absent = constant train.lr): constant, step or cosine, each with an optional linear warm-up (warmup_epochs, warmup_start_factor)"`
	GradClip        float64            `toml:"grad_clip" hash:"omitempty" range:"[0,)" doc:"clip the global L2 norm of each step's whole gradient (all parameters, after micro-batch accumulation and all-reduce) to this, as torch.nn.utils.clip_grad_norm_ (0 = off)"`
	WeightDecay     float64            `toml:"weight_decay" range:"[0,)" doc:"weight decay: L2 added to the gradient (adam, sgd), decoupled (adamw; 0.01 when not set, PyTorch's default)"`
	WeightDecayBy   map[string]float64 `toml:"weight_decay_by" hash:"omitempty" example:"{ \"l*.weight\" = 0.01 }" doc:"a weight decay of their own for the parameters whose names match a pattern (PyTorch's parameter groups), the others keeping train.weight_decay: a name's dot-separated parts are matched as globs, so \"l*.weight\" is every layer's own weight but not l0.lin_in.weight; a pattern that matches no parameter, or two patterns that match one, are errors naming the parameters"`
	Momentum        float64            `toml:"momentum" range:"[0,1)" doc:"momentum (sgd only)"`
	Seed            int64              `toml:"seed" doc:"random seed for parameter initialisation, dropout and synthetic features"`
	EvalEvery       int                `toml:"eval_every" range:"[0,10000000]" doc:"evaluate every this many epochs (0 = only after the last epoch)"`
	Patience        int                `toml:"patience" range:"[0,10000000]" doc:"stop after this many epochs without a better train.early_stop_metric (0 = never)"`
	Backend         string             `toml:"backend" modules:"backend" doc:"compute backend: cpu; sim = simulated devices (see [devices]) whose capacity is enforced and whose link traffic is counted; cuda = the first NVIDIA GPU (a binary built with -tags cuda, see docs/cuda.md)"`
	Threads         int                `toml:"threads" range:"[0,4096]" doc:"CPU threads (0 = all cores)"`
	DType           string             `toml:"dtype" enum:"float32,float64" doc:"floating-point type of features, activations and parameters"`
	Task            string             `toml:"task" hash:"omitempty" enum:",node,regression,link" doc:"what is trained: node (\"\", the default) = the dataset's labels, one class per node (softmax cross-entropy) or, from a 2-D 0/1 y of shape (N, C), C independent labels (multi-label, sigmoid binary cross-entropy); regression = the dataset's y read as real values, one or T per node (mean squared error; valid_acc and test_acc then report R²); link = link prediction: the last layer's output is node embeddings, a decoder scores pairs, binary cross-entropy against negatives (train_acc, valid_acc and test_acc then report ROC-AUC; see [link], data.edge_split and docs/link-prediction.md). See docs/datasets.md, \"Targets\""`
	CheckpointEvery int                `toml:"checkpoint_every" hash:"-" range:"[0,10000000]" doc:"write output.checkpoint (parameters, optimizer state, early-stopping state, next epoch) atomically every this many epochs (0 = never; not part of config_sha256: it does not change the result); strata train --resume continues from it, see docs/checkpoints.md"`

	// Metrics and EarlyStopMetric: checked against core/metrics by train
	// (checkMetrics), left out of the hash when unset.
	Metrics         []string `toml:"metrics" hash:"omitempty" example:"[\"accuracy\", \"macro_f1\", \"roc_auc\"]" doc:"metrics reported on the validation and test nodes (valid_<name>, test_<name> in the result, output.csv and output.log; accuracy is always reported); a name registered in core/metrics, listed in docs/outputs.md and in the error of an unknown one"`
	EarlyStopMetric string   `toml:"early_stop_metric" hash:"omitempty" example:"valid_loss" doc:"the validation figure that picks the best epoch and that train.patience watches: valid_acc (\"\" = valid_acc), valid_loss (lower is better) or valid_<name> of a metric in train.metrics"`
}

// Devices describes the simulated machine (train.backend = "sim").
type Devices struct {
	Preset      string `toml:"preset" enum:",pcie-only,nvlink-clique-4,nvlink-ring-4,dgx1-v100-8" doc:"simulated topology (\"\" = pcie-only); training uses its first device"`
	Count       int    `toml:"count" range:"[0,1024]" doc:"devices of a pcie-only machine (0 = 1), or the first count GPUs of dgx1-v100-8 (its links and PCIe switches among them; 0 = all 8)"`
	MemoryBytes int64  `toml:"memory_bytes" range:"[0,1125899906842624]" doc:"capacity of each simulated device in bytes (0 = unlimited); an allocation beyond it fails"`
	// A custom topology instead of a preset.
	HostGBps       []float64   `toml:"host_gbps" range:"(0,)" doc:"custom topology: the host<->device bandwidth of each device in GB/s (its length is the device count; leave preset and count unset)"`
	PeerGBps       [][]float64 `toml:"peer_gbps" range:"[0,)" doc:"custom topology: NVLink bandwidth from device i to device j in GB/s, a symmetric matrix with zeros on the diagonal (0 = no direct link; transfers then go through the host)"`
	PCIeSwitch     []int       `toml:"pcie_switch" hash:"omitempty" range:"[-1,1024]" doc:"custom topology: the PCIe switch of each device (-1 = its own link to the host); devices behind one switch share its uplink, so their host transfers take turns (the dgx1-v100-8 preset pairs its GPUs this way)"`
	SwitchGBps     float64     `toml:"switch_gbps" hash:"omitempty" range:"[0,)" doc:"custom topology: bandwidth of a PCIe switch's uplink to the host in GB/s, per direction (0 = 16, PCIe 3.0 x16)"`
	ZeroCopy       bool        `toml:"zero_copy" hash:"omitempty" doc:"device kernels read pinned host memory in place (zero-copy, as a GPU reads UVA-mapped host memory): the feature store's gather reads cold rows straight from the host over the device's host link, each row's bytes counted and timed at the link's bandwidth, instead of gathering them on the host and copying them (data tiering Fig. 8)"`
	HostGatherGBps float64     `toml:"host_gather_gbps" hash:"omitempty" range:"[0,)" doc:"the host CPU's gather rate for the simulated devices in GB/s of rows written: a CPU gather of feature rows (the store's host rows without zero-copy) is priced at it, as host time before the devices' kernels (data tiering's CPU-gather baseline, Fig. 8); 0 = host work is not timed"`
	// What the devices compute at, for the predicted times.
	CostModel  string  `toml:"cost_model" example:"roofline" doc:"cost model that predicts every device kernel's time, registry ID costmodel.<name> (\"\" = roofline; \"none\" = predict transfer time only)"`
	PeakGFLOPS float64 `toml:"peak_gflops" range:"[0,)" doc:"device float32 throughput in GFLOP/s for the cost model (0 = a V100's 15700)"`
	MemGBps    float64 `toml:"mem_gbps" range:"[0,)" doc:"device memory bandwidth in GB/s for the cost model (0 = a V100's 900)"`
	LaunchUS   float64 `toml:"launch_us" range:"[0,)" special:"-1:a V100's 5 µs" doc:"fixed cost of a kernel launch in µs for the cost model (-1 = a V100's 5)"`
}

// Output configures what a run prints and writes.
type Output struct {
	Log        string `toml:"log" example:"run.jsonl" doc:"write one JSON line per epoch (the epoch's record) to this file (\"\" = none); relative paths and safety as output.csv"`
	JSON       bool   `toml:"json" doc:"print the result summary as one JSON line on stdout"`
	Progress   string `toml:"progress" enum:"auto,on,off" doc:"progress on stderr: a bar on a terminal, otherwise (under nohup or a batch scheduler) one line per epoch, at most one a second, with loss, accuracy, time per epoch and ETA; auto = on, off = none"`
	Checkpoint string `toml:"checkpoint" doc:"the checkpoint file train.checkpoint_every writes and strata train --resume reads (\"\" = none); relative like output.csv; see docs/checkpoints.md"`
	Model      string `toml:"model" doc:"write the best-validation parameters with the config and module hashes to this file when the run ends (\"\" = none), for strata predict -m; relative like output.csv"`
	CSV        string `toml:"csv" doc:"write per-epoch metrics to this CSV file (\"\" = none); a relative path is relative to the config file (to the working directory when given with --set); written atomically when the run ends, locked against a second writer"`
}

// Plugin is a plugin section: it names a module of the section's registry
// namespace and holds the module decoded from the section's other keys.
type Plugin struct {
	// Name is the module's name within the namespace ("full" for
	// sampler.full); "" when the section is absent or names no plugin.
	Name string
	// ID is the full registry ID ("sampler.full"), or "".
	ID string
	// Options are the section's keys other than name, as decoded TOML
	// (int64, float64, bool, string, []any, map[string]any).
	Options map[string]any
	// Module is the module instance with its options decoded and
	// validated (registry.ValidateDecoded), provisioned by
	// Config.Provision; nil when Name is "".
	Module registry.Module
}

// Default returns the default config. It is the one place where defaults
// are set. Data.Dataset has no default: a config must name its dataset.
func Default() *Config {
	return &Config{
		Data: Data{
			Symmetrize:  true,
			FeatureNorm: "auto",
			Reorder:     "none",
		},
		Model: Model{
			Name:         "gcn",
			Layers:       2,
			Hidden:       16,
			Dropout:      0.5,
			InputDropout: -1,
		},
		Train: Train{
			Mode:        registry.DefaultName(strategyNamespace),
			Epochs:      200,
			Optimizer:   "adam",
			LR:          0.01,
			WeightDecay: 5e-4,
			EvalEvery:   1,
			Backend:     "cpu",
			DType:       "float32",
		},
		Devices: Devices{LaunchUS: -1},
		Link:    Link{Decoder: "dot", Negatives: 1, Exclude: "batch", Loss: "bce", Margin: 1},
		Output: Output{
			JSON:     true,
			Progress: "auto",
		},
	}
}

// Load reads and parses a config file, then applies overrides of the form
// "key.path=value" (see Parse).
func Load(path string, overrides ...string) (*Config, error) {
	data, err := ReadFile(path, "config")
	if err != nil {
		return nil, err
	}
	return Parse(path, data, overrides...)
}

// ReadFile reads a config or experiment file (what names it in errors)
// through the read gate (safefile.ReadFile): only a regular file of at
// most MaxConfigBytes, so a FIFO or a device is an *Error at once instead
// of a hang or an endless read.
func ReadFile(path, what string) ([]byte, error) {
	data, err := safefile.ReadFile(path, MaxConfigBytes)
	var nr *safefile.NotRegularError
	switch {
	case err == nil:
		return data, nil
	case errors.As(err, &nr):
		return nil, &Error{File: path, Msg: fmt.Sprintf("cannot read %s: it is %s; give a TOML file", what, nr.Kind())}
	case errors.Is(err, safefile.ErrTooLarge):
		return nil, &Error{File: path, Msg: fmt.Sprintf("%s is larger than the limit of %d MiB: is this the right file?", what, MaxConfigBytes>>20)}
	}
	msg := err.Error()
	var pe *os.PathError
	if errors.As(err, &pe) {
		msg = pe.Err.Error()
	}
	return nil, &Error{File: path, Msg: "cannot read " + what + ": " + msg}
}

// KeyError returns an *Error located where the key path was set (file:line
// or the --set override), for checks made after parsing, such as a layer
// module rejecting one of model.options.
func (c *Config) KeyError(msg string, path ...string) error {
	if c.src == nil {
		return &Error{File: c.Path, Key: strings.Join(path, "."), Msg: msg}
	}
	return c.src.errorAt(path, msg)
}

// InputDropoutRate returns the effective input dropout: InputDropout, or
// Dropout when InputDropout is -1.
func (m *Model) InputDropoutRate() float64 {
	if m.InputDropout == -1 {
		return m.Dropout
	}
	return m.InputDropout
}

// ResolvePath returns p relative to the config file's directory when p is
// a relative file path; absolute paths, "scheme:..." specs (embedded:cora)
// and generator specs (rmat-...) are returned as they are.
func (c *Config) ResolvePath(p string) string {
	if p == "" || c.Path == "" || filepath.IsAbs(p) || strings.Contains(p, ":") || strings.HasPrefix(p, "rmat-") {
		return p
	}
	return filepath.Join(filepath.Dir(c.Path), p)
}

// DatasetSpec returns Data.Dataset resolved against the config's directory
// (or, when a --set override gave it, the working directory).
// A data.split is appended as "@<split>".
func (c *Config) DatasetSpec() string {
	spec := c.resolveKey(c.Data.Dataset, "data", "dataset")
	if c.Data.Split != "" {
		spec += "@" + c.Data.Split
	}
	return spec
}

// CSVPath returns Output.CSV resolved like DatasetSpec: relative to the
// config file's directory, or to the working directory when --set gave it.
func (c *Config) CSVPath() string { return c.resolveKey(c.Output.CSV, "output", "csv") }

// LogPath returns Output.Log resolved like CSVPath.
func (c *Config) LogPath() string { return c.resolveKey(c.Output.Log, "output", "log") }

// CheckpointPath returns Output.Checkpoint resolved like CSVPath.
func (c *Config) CheckpointPath() string {
	return c.resolveKey(c.Output.Checkpoint, "output", "checkpoint")
}

// ModelPath returns Output.Model resolved like CSVPath.
func (c *Config) ModelPath() string { return c.resolveKey(c.Output.Model, "output", "model") }

// ModulePath returns Model.Module resolved like DatasetSpec ("" when the
// model is chosen by name).
func (c *Config) ModulePath() string { return c.resolveKey(c.Model.Module, "model", "module") }

// OptionPath resolves a model.options string that names a file (an
// aggregator module) like model.module.
func (c *Config) OptionPath(key, p string) string { return c.resolveKey(p, "model", "options", key) }

// DecoderPath resolves link.decoder when it names a .wasm file, like
// model.module.
func (c *Config) DecoderPath() string { return c.resolveKey(c.Link.Decoder, "link", "decoder") }

// DecoderOptionPath resolves a link.decoder_options string that names a
// file like link.decoder.
func (c *Config) DecoderOptionPath(key, p string) string {
	return c.resolveKey(p, "link", "decoder_options", key)
}

// resolveKey resolves the path value p of the key path: an override's
// relative path is relative to the working directory, a file's to the
// file's directory.
func (c *Config) resolveKey(p string, path ...string) string {
	if c.src != nil && c.src.pos[toml.Key(path).String()].override != "" {
		return p
	}
	return c.ResolvePath(p)
}

// String describes the plugin for messages: its ID or "none".
func (p Plugin) String() string {
	if p.ID == "" {
		return "none"
	}
	return p.ID
}
