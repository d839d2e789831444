package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"strata/core/partition"
	"strata/plugins/partreport"
)

func cmdPartition(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("partition", "[-c FILE] [-k K] [--batch] [--set key=value]...", stderr)
	var cf configFlags
	cf.register(fs)
	k := fs.Int("k", 0, "number of parts (default: micro_batches of train.mode's section)")
	batch := fs.Bool("batch", false, "split the training nodes into micro-batches (as micro_batches does) instead of partitioning the graph")
	cfg, _, err := cf.load(fs, args)
	if err != nil {
		return err
	}
	configured := 1 // the parts train.mode splits a step into (0: "auto")
	if k, ok := partition.PartsOf(cfg.Strategy.Module); ok {
		configured = k
	}
	if *k == 0 {
		*k = configured
	}
	if *k < 1 || *k == 1 && configured == 1 && !flagSet(fs, "k") {
		if configured == 0 {
			return usagef("partition: micro_batches = \"auto\" picks K when training; give the number of parts with -k K")
		}
		return usagef("partition: give the number of parts with -k K (or set micro_batches)")
	}
	rep, err := partreport.Partition(ctx, cfg, *k, *batch, progressWriter(cfg.Output.Progress, stderr))
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "%s %s of %s: %s in %.3fs\n", rep.Partitioner, rep.Target, rep.Dataset, rep.Metrics, rep.TimeS)
	if len(rep.LayerRedundancy) > 0 {
		fmt.Fprintf(stderr, "redundancy per layer (input first): %.3f\n", rep.LayerRedundancy)
	}
	line, err := json.Marshal(rep)
	if err != nil {
		return &internalError{err}
	}
	fmt.Fprintf(stdout, "%s\n", line)
	return nil
}
