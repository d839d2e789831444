package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"strata/core/config"
	"strata/core/train"
	"strata/plugins/wasm"
)

// configUsage is the synopsis of strata config.
const configUsage = "explain [KEY|SECTION|MODULE] [--wasm-cache DIR]"

// cmdConfig prints the annotated config schema (config explain), or the
// part of it about one key (train.lr), section (train, sampler) or module
// ID (sampler.uniform, model.gat); model, model.options and a model.*
// module also list the layer options the modules read.
func cmdConfig(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	pos, wopts, err := parseWithWasm("config", configUsage, args, 2, stderr)
	if err != nil {
		return err
	}
	if len(pos) == 0 || pos[0] != "explain" {
		return usagef("usage: strata config %s (e.g. strata config explain train.lr)", configUsage)
	}
	if len(pos) == 1 {
		fmt.Fprint(stdout, config.Explain())
		return nil
	}
	topic := pos[1]
	text, err := config.ExplainTopic(topic)
	if err != nil {
		return usagef("%v", err)
	}
	var b strings.Builder
	b.WriteString(text)
	var ids []string
	switch {
	case topic == "model" || topic == "model.options":
		ids = modelIDs()
	case slices.Contains(modelIDs(), topic):
		ids = []string{topic}
	}
	if len(ids) > 0 {
		if err := explainLayerOptions(ctx, wopts, &b, ids); err != nil {
			return &internalError{err}
		}
	}
	fmt.Fprint(stdout, b.String())
	return nil
}

func cmdValidate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("validate", "[-c FILE] [--set key=value]... [--skip-data]", stderr)
	var cf configFlags
	cf.register(fs)
	skipData := fs.Bool("skip-data", false, "check the config and the layer module only, without opening the dataset")
	cfg, wopts, err := cf.load(fs, args)
	if err != nil {
		return err
	}
	if err := train.CheckOutputs(cfg); err != nil { // what training would refuse before its first epoch
		return err
	}
	if err := train.Check(withMaxMemory(ctx, cf.maxMem), cfg, wasm.Host{Options: wopts}, *skipData); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: ok (dataset %s, model %s, %d layers)\n", cf.path, cfg.Data.Dataset, modelLabel(cfg), cfg.Model.Layers)
	return nil
}

func modelLabel(cfg *config.Config) string {
	if cfg.Model.Module != "" {
		return cfg.Model.Module
	}
	return cfg.Model.Name
}
