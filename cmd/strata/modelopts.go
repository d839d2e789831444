package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"strata/core/modhost"
	"strata/core/registry"
	"strata/core/train"
	"strata/plugins/wasm"
)

// layerOption is one model.options key a layer module reads, with the
// default it applies (as TOML).
type layerOption struct{ key, def string }

// layerOptions returns the model.options keys the layer module id
// (model.<name>) reads, sorted, with their defaults: those it asks for
// while describing the hidden and the last layer of a two-layer model,
// less the ones strata sets for every layer. Options read only under
// other options' values (an aggregator's own) are not among them.
func layerOptions(ctx context.Context, wopts wasm.Options, id string) ([]layerOption, error) {
	code, err := modhost.Lookup(id)
	if err != nil {
		return nil, err
	}
	mod, release, err := wasm.Host{Options: wopts}.LoadLayer(ctx, id, code)
	if err != nil {
		return nil, err
	}
	defer release()
	var opts []layerOption
	for l := range int64(2) {
		var lc modhost.LayerConfig
		lc.SetInt("in_dim", 8).SetInt("out_dim", 8).SetInt("layer", l).SetInt("layers", 2).SetInt("last", l).SetFloat("dropout", 0)
		spec, err := mod.LayerSpec(ctx, lc)
		if err != nil {
			return nil, fmt.Errorf("%s: describing layer %d of 2: %w", id, l, err)
		}
		for _, k := range spec.KeysRead {
			if !train.HostKey(k) && !slices.ContainsFunc(opts, func(o layerOption) bool { return o.key == k }) {
				opts = append(opts, layerOption{k, spec.Defaults[k]})
			}
		}
	}
	slices.SortFunc(opts, func(a, b layerOption) int { return strings.Compare(a.key, b.key) })
	return opts, nil
}

// explainLayerOptions writes the model.options the layer modules ids read
// with their defaults: for one module as its [model.options] table, for
// several one comment line each.
func explainLayerOptions(ctx context.Context, wopts wasm.Options, b *strings.Builder, ids []string) error {
	const beside = "# (beside those strata sets for every layer from model.layers, model.hidden\n# and model.dropout)\n"
	if len(ids) == 1 {
		opts, err := layerOptions(ctx, wopts, ids[0])
		if err != nil {
			return err
		}
		name := strings.TrimPrefix(ids[0], "model.")
		fmt.Fprintf(b, "\n[model]\nname = %q\n\n# the options %s reads, at the defaults it applies\n%s[model.options]\n", name, ids[0], beside)
		for _, o := range opts {
			fmt.Fprintf(b, "%s = %s\n", o.key, o.def)
		}
		return nil
	}
	fmt.Fprintf(b, "\n# [model.options] each layer module reads, with its defaults\n%s", beside)
	for _, id := range ids {
		opts, err := layerOptions(ctx, wopts, id)
		if err != nil {
			return err
		}
		list := make([]string, len(opts))
		for i, o := range opts {
			list[i] = o.key + " = " + o.def
		}
		if len(list) == 0 {
			list = []string{"(none)"}
		}
		fmt.Fprintf(b, "#   %-16s %s\n", id, strings.Join(list, ", "))
	}
	return nil
}

// modelIDs lists the registered layer modules' IDs.
func modelIDs() []string {
	var out []string
	for _, m := range registry.Namespace("model") {
		out = append(out, m.ID)
	}
	return out
}
