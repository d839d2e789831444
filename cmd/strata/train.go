package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"strata/core/config"
	"strata/core/metrics"
	"strata/core/train"
)

func cmdTrain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("train", "-c FILE [--set key=value]...", stderr)
	path := fs.String("c", "", "config file (TOML); see `strata config explain`")
	var sets multi
	fs.Var(&sets, "set", "override a config key, e.g. --set train.epochs=50 (repeatable)")
	var wf wasmFlags
	wf.register(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if *path == "" {
		return usagef("train: -c FILE is required (try configs/gcn-cora.toml)")
	}
	wopts, err := wf.options()
	if err != nil {
		return err
	}
	cfg, err := config.Load(*path, sets...)
	if err != nil {
		return err
	}
	res, err := train.Run(ctx, cfg, train.Options{
		Progress: progressWriter(cfg.Output.Progress, stderr),
		Version:  fullVersion(),
		Wasm:     wopts,
	})
	if err != nil {
		return err
	}
	if cfg.Output.JSON {
		line, err := json.Marshal(res)
		if err != nil {
			return &internalError{err}
		}
		fmt.Fprintf(stdout, "%s\n", line)
	} else {
		fmt.Fprintf(stdout, "%s %s: best valid %.4f (epoch %d), test %.4f, %.4gs/epoch\n",
			res.Model, res.Dataset, res.BestValidAcc, res.BestEpoch, res.TestAcc, res.EpochTimeMedianS)
	}
	return nil
}

// progressWriter resolves output.progress: the bar goes to stderr when it
// is "on", or "auto" and stderr is a terminal.
func progressWriter(mode string, stderr io.Writer) io.Writer {
	switch mode {
	case "on":
		return stderr
	case "auto":
		if f, ok := stderr.(*os.File); ok && metrics.IsTerminal(f) {
			return stderr
		}
	}
	return nil
}
