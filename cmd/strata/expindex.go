package main

import (
	"context"
	"fmt"
	"io"

	"strata/experiments/runner/index"
)

// experimentIndex is --index README: it regenerates the table of
// experiments in README from the experiment files beside it and their
// committed results.
func experimentIndex(ctx context.Context, readme string, stdout io.Writer) error {
	changed, err := index.Update(ctx, readme)
	if err != nil {
		return err
	}
	state := "unchanged"
	if changed {
		state = "updated"
	}
	fmt.Fprintf(stdout, "%s: index %s\n", readme, state)
	return nil
}
