package main

import (
	"context"
	"fmt"
	"io"

	"strata/core/config"
	"strata/core/train"
)

func cmdConfig(_ context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) != 1 || args[0] != "explain" {
		return usagef("usage: strata config explain")
	}
	fmt.Fprint(stdout, config.Explain())
	return nil
}

func cmdValidate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("validate", "-c FILE [--set key=value]...", stderr)
	path := fs.String("c", "", "config file (TOML)")
	var sets multi
	fs.Var(&sets, "set", "override a config key (repeatable)")
	skipData := fs.Bool("skip-data", false, "check the config and the layer module only, without opening the dataset")
	var wf wasmFlags
	wf.register(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if *path == "" {
		return usagef("validate: -c FILE is required")
	}
	wopts, err := wf.options()
	if err != nil {
		return err
	}
	cfg, err := config.Load(*path, sets...)
	if err != nil {
		return err
	}
	if err := train.Check(ctx, cfg, wopts, *skipData); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: ok (dataset %s, model %s, %d layers)\n", *path, cfg.Data.Dataset, modelLabel(cfg), cfg.Model.Layers)
	return nil
}

func modelLabel(cfg *config.Config) string {
	if cfg.Model.Module != "" {
		return cfg.Model.Module
	}
	return cfg.Model.Name
}
