package train

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"strata/core/config"
	"strata/core/ir"
	"strata/core/modhost"
	"strata/core/safefile"
	"strata/models"
)

// hostKeys are the layer options the host sets for every layer; a config
// may not set them in model.options.
var hostKeys = []string{"in_dim", "out_dim", "layer", "layers", "last", "dropout"}

// HostKey reports whether k is a layer option the host sets for every
// layer (not one of model.options).
func HostKey(k string) bool { return slices.Contains(hostKeys, k) }

// Model is a linked model graph and where it came from.
type Model struct {
	Name   string    // the module's name ("gcn", or a file's base name)
	SHA256 string    // of the module bytes
	Graph  *ir.Graph // all layers, linked
	// Modules holds the SHA-256 of every aggregator module the layers
	// loaded, by its key in the model's identity (moduleKey), and a link
	// model's decoder's (link.decoder, addDecoderSum).
	Modules map[string]string
	// EdgeWeights: the module declares that it reads edge weights
	// (models.MetaEdgeWeights).
	EdgeWeights bool
}

// BuildModel loads the configured layer module (model.module, or the
// registered model.<name>), asks it for each layer's op graph and links the
// layers into one model from inDim input features to classes outputs.
//
// Hidden layers are model.hidden × model.options.heads wide (heads defaults
// to 1), so attention models size hidden per head. Every key of
// model.options must be read by the module; one that is not is an error
// naming its line, since a misspelt option would otherwise be ignored.
func BuildModel(ctx context.Context, cfg *config.Config, host modhost.Host, inDim, classes int) (*Model, error) {
	m := cfg.Model
	name, code, err := moduleBytes(cfg)
	if err != nil {
		return nil, err
	}
	user, err := userOptions(cfg)
	if err != nil {
		return nil, err
	}
	mod, release, err := host.LoadLayer(ctx, name, code)
	if err != nil {
		if cfg.Model.Module != "" {
			return nil, cfg.KeyError("model.module: "+err.Error(), "model", "module")
		}
		return nil, err
	}
	defer release()
	heads := int64(1)
	if h, ok := user.Ints["heads"]; ok && h > 0 {
		heads = h
	}
	read, used := map[string]bool{}, map[string]string{}
	graphs := make([]*ir.Graph, 0, m.Layers)
	in := int64(inDim)
	for l := range m.Layers {
		lc := user.Clone()
		last, out := classifierLayer(cfg, l, heads, classes)
		drop := m.Dropout
		if l == 0 {
			drop = m.InputDropoutRate()
		}
		lc.SetInt("in_dim", in).SetInt("out_dim", out).SetInt("layer", int64(l)).
			SetInt("layers", int64(m.Layers)).SetFloat("dropout", drop)
		if last {
			lc.SetInt("last", 1)
		} else {
			lc.SetInt("last", 0)
		}
		spec, err := mod.LayerSpec(ctx, lc)
		if err != nil {
			if k, ok := blamedOption(cfg, err); ok {
				return nil, cfg.KeyError(fmt.Sprintf("model.options.%s = %q: layer %d of %d: %v", k, cfg.Model.Options[k], l, m.Layers, err), "model", "options", k)
			}
			return nil, fmt.Errorf("layer %d of %d: %w", l, m.Layers, err)
		}
		for _, k := range spec.KeysRead {
			read[k] = true
		}
		for name, sum := range spec.Modules {
			used[moduleKey(cfg, name)] = sum
		}
		g := spec.Graph
		if len(g.Outputs) != 1 {
			return nil, fmt.Errorf("model %q layer %d has %d outputs, want 1", name, l, len(g.Outputs))
		}
		if m.Residual {
			if g, err = ir.Residual(g); err != nil {
				return nil, cfg.KeyError(fmt.Sprintf("model.residual: model %q layer %d of %d: %v", name, l, m.Layers, err), "model", "residual")
			}
		}
		graphs = append(graphs, g)
		in = g.Ops[g.Outputs[0]].Shape[1]
	}
	if err := checkOptionsRead(cfg, name, user.Keys(), read); err != nil {
		return nil, err
	}
	for _, op := range graphs[0].Ops {
		if op.Kind == ir.OpInput && op.Shape[1] != int64(inDim) {
			return nil, fmt.Errorf("model %q: layer 0 takes input width %d but the dataset has %d features (read the width from in_dim)", name, op.Shape[1], inDim)
		}
	}
	link := ir.Link
	if m.JK != "" {
		link = func(gs []*ir.Graph) (*ir.Graph, error) { return ir.LinkJK(gs, m.JK, int64(classes)) }
	}
	linked, err := link(graphs)
	if err != nil {
		return nil, fmt.Errorf("model %q: %w", name, err)
	}
	if w := linked.Ops[linked.Outputs[0]].Shape[1]; w != int64(classes) {
		return nil, fmt.Errorf("model %q produces %d outputs per node, but the dataset has %d classes", name, w, classes)
	}
	if err := checkBindable(cfg, name, linked); err != nil {
		return nil, err
	}
	weighted, err := declaresEdgeWeights(name, code)
	if err != nil {
		return nil, err
	}
	if err := addDecoderSum(cfg, used); err != nil {
		return nil, err
	}
	return &Model{Name: name, SHA256: mod.SHA256(), Graph: linked, Modules: used, EdgeWeights: weighted}, nil
}

// checkOptionsRead refuses a model.options key the module never read,
// naming the options it does read.
func checkOptionsRead(cfg *config.Config, name string, keys []string, read map[string]bool) error {
	for _, k := range keys {
		if read[k] {
			continue
		}
		known := make([]string, 0, len(read))
		for r := range read {
			if !slices.Contains(hostKeys, r) {
				known = append(known, r)
			}
		}
		sort.Strings(known)
		return cfg.KeyError(fmt.Sprintf("model.options.%s: the %q module does not use option %q (it reads: %s); remove it or fix its spelling",
			k, name, k, strings.Join(known, ", ")), "model", "options", k)
	}
	return nil
}

// declaresEdgeWeights says whether the layer module's code declares that
// it reads edge weights (models.MetaEdgeWeights).
func declaresEdgeWeights(name string, code []byte) (bool, error) {
	meta, err := models.Meta(code)
	if err != nil {
		return false, fmt.Errorf("model %q: %w", name, err)
	}
	return meta[models.MetaEdgeWeights] != "", nil
}

// moduleKey is the identity key of an aggregator module a layer loaded
// by name: model.options.<k> for the module file option k names (by its
// bytes, wherever the file lies), else model.aggregators.<name> for a
// registered one.
func moduleKey(cfg *config.Config, name string) string {
	if strings.HasSuffix(name, ".wasm") {
		for _, k := range slices.Sorted(maps.Keys(cfg.Model.Options)) {
			if v, ok := cfg.Model.Options[k].(string); ok && v == name {
				return "model.options." + k
			}
		}
	}
	return "model.aggregators." + name
}

// classifierLayer says whether layer l is the model's classifier (the
// last one, unless model.jk adds its own) and its output width: classes
// for the classifier, model.hidden × heads otherwise.
func classifierLayer(cfg *config.Config, l int, heads int64, classes int) (bool, int64) {
	if l == cfg.Model.Layers-1 && cfg.Model.JK == "" {
		return true, int64(classes)
	}
	return false, int64(cfg.Model.Hidden) * heads
}

// checkBindable refuses a model the strategy train.mode names cannot
// bind: one that binds a sampled block per layer (Uses.Blocks) needs every
// layer one hop deep into the graph. The error names model.name, or
// model.module for a module file.
func checkBindable(cfg *config.Config, name string, g *ir.Graph) error {
	strat, err := StrategyFor(cfg)
	if err != nil || !strat.Uses().Blocks {
		return nil // an unknown mode is reported where the strategy is made
	}
	for l, n := range g.Needs() {
		if n.Blocks() {
			continue
		}
		what := fmt.Sprintf("reads the graph %d hops deep", n.Hops)
		if !n.ReadsGraph {
			what = "reads no graph"
		}
		msg := fmt.Sprintf("model %q: layer %d of %d %s, but train.mode = %q binds one sampled block (one hop) per layer; "+
			"train this model with train.mode = %s (at its default options), or pick a layer that reads its neighbours once per layer", name, l, len(g.Needs()), what, cfg.Train.Mode, modesUsing(func(u Uses) bool { return !u.Blocks }))
		return modelKeyError(cfg, msg)
	}
	return nil
}

// moduleBytes returns the module named by model.module (a file) or
// model.name (a registered model.* plugin).
func moduleBytes(cfg *config.Config) (string, []byte, error) {
	if cfg.Model.Module != "" {
		name, b, err := models.Resolve(cfg.ModulePath(), readModule)
		if err != nil {
			return "", nil, cfg.KeyError("model.module: "+err.Error(), "model", "module")
		}
		return name, b, nil
	}
	b, err := modhost.Lookup("model." + cfg.Model.Name)
	if err != nil {
		return "", nil, cfg.KeyError(fmt.Sprintf("model.name = %q: %v", cfg.Model.Name, err), "model", "name")
	}
	return cfg.Model.Name, b, nil
}

// readModule reads a user's module file (model.module, or a .wasm named in
// model.options) through the read gate: only a regular file of at most
// models.MaxModuleBytes, so a FIFO or a link to /dev/zero is refused
// before it is read, not a hang or an endless allocation.
func readModule(path string) ([]byte, error) {
	b, err := safefile.ReadFile(path, models.MaxModuleBytes)
	var nr *safefile.NotRegularError
	switch {
	case err == nil:
		return b, nil
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("model module %s: no such file", path)
	case errors.As(err, &nr):
		return nil, fmt.Errorf("model module %s is %s, not a regular file; build the guest into a .wasm file and name it (see docs/models.md)", path, nr.Kind())
	case errors.Is(err, safefile.ErrTooLarge):
		return nil, fmt.Errorf("model module %s is over the %d MiB limit of a module; is this the right file?", path, models.MaxModuleBytes>>20)
	}
	return nil, fmt.Errorf("model module: %w", err)
}

// userOptions converts model.options to a layer config, rejecting the keys
// the host sets itself.
// setOption sets option k of c to the TOML value v (an integer, float,
// boolean as 0 or 1, or string); it reports false for any other type.
func setOption(c *modhost.LayerConfig, k string, v any) bool {
	switch v := v.(type) {
	case int64:
		c.SetInt(k, v)
	case float64:
		c.SetFloat(k, v)
	case bool:
		b := int64(0)
		if v {
			b = 1
		}
		c.SetInt(k, b)
	case string:
		c.SetString(k, v)
	default:
		return false
	}
	return true
}

func userOptions(cfg *config.Config) (modhost.LayerConfig, error) {
	var c modhost.LayerConfig
	keys := make([]string, 0, len(cfg.Model.Options))
	for k := range cfg.Model.Options {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if slices.Contains(hostKeys, k) {
			return c, cfg.KeyError(fmt.Sprintf("model.options.%s is set by strata for every layer; use model.layers, model.hidden and model.dropout instead", k), "model", "options", k)
		}
		v := cfg.Model.Options[k]
		if !setOption(&c, k, v) {
			return c, cfg.KeyError(fmt.Sprintf("model.options.%s: expected integer, float, boolean or string, got %T", k, v), "model", "options", k)
		}
		if v, ok := v.(string); ok && strings.HasSuffix(v, ".wasm") {
			p := cfg.OptionPath(k, v)
			b, err := readModule(p)
			if err == nil {
				err = models.CheckFile(p, b)
			}
			if err != nil {
				return c, cfg.KeyError(fmt.Sprintf("model.options.%s: %v", k, err), "model", "options", k)
			}
			if c.Modules == nil {
				c.Modules = map[string][]byte{}
			}
			c.Modules[v] = b
		}
	}
	return c, nil
}

// blamedOption returns the string option of model.options whose value a
// layer module's error quotes (an unknown aggregator name, a string where
// the module reads a number), so the error can name its key and line.
func blamedOption(cfg *config.Config, err error) (string, bool) {
	keys := make([]string, 0, len(cfg.Model.Options))
	for k := range cfg.Model.Options {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if v, ok := cfg.Model.Options[k].(string); ok && strings.Contains(err.Error(), strconv.Quote(v)) {
			return k, true
		}
	}
	return "", false
}
