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

// layerOptions returns the model.options keys the layer module id
// (model.<name>) reads, sorted: those it asks for while describing the
// hidden and the last layer of a two-layer model, less the ones strata
// sets for every layer. Options read only under other options' values
// (an aggregator's own) are not among them.
func layerOptions(ctx context.Context, wopts wasm.Options, id string) ([]string, error) {
	code, err := modhost.Lookup(id)
	if err != nil {
		return nil, err
	}
	mod, release, err := wasm.Host{Options: wopts}.LoadLayer(ctx, id, code)
	if err != nil {
		return nil, err
	}
	defer release()
	var opts []string
	for l := range int64(2) {
		var lc modhost.LayerConfig
		lc.SetInt("in_dim", 8).SetInt("out_dim", 8).SetInt("layer", l).SetInt("layers", 2).SetInt("last", l).SetFloat("dropout", 0)
		spec, err := mod.LayerSpec(ctx, lc)
		if err != nil {
			return nil, fmt.Errorf("%s: describing layer %d of 2: %w", id, l, err)
		}
		for _, k := range spec.KeysRead {
			if !train.HostKey(k) {
				opts = append(opts, k)
			}
		}
	}
	slices.Sort(opts)
	return slices.Compact(opts), nil
}

// explainLayerOptions writes the model.options of the model modules ids
// as comment lines: "model.gat reads: heads, out_heads, ...".
func explainLayerOptions(ctx context.Context, wopts wasm.Options, b *strings.Builder, ids []string) error {
	b.WriteString("\n# [model.options] keys each layer module reads (beside those strata sets\n# for every layer from model.layers, model.hidden and model.dropout):\n")
	for _, id := range ids {
		opts, err := layerOptions(ctx, wopts, id)
		if err != nil {
			return err
		}
		list := strings.Join(opts, ", ")
		if list == "" {
			list = "(none)"
		}
		fmt.Fprintf(b, "#   %-16s %s\n", id, list)
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
