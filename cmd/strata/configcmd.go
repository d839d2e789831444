package main

import (
	"context"
	"fmt"
	"io"

	"strata/core/config"
	"strata/core/train"
	"strata/plugins/wasm"
)

func cmdConfig(_ context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) != 1 || args[0] != "explain" {
		return usagef("usage: strata config explain")
	}
	fmt.Fprint(stdout, config.Explain())
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
