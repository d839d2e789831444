package main

import (
	"context"
	"io"
	"time"

	"strata/core/graph"
	"strata/core/metrics"
)

// Load progress settings: nothing is printed for a load that ends within
// quietFor; after that a bar (on a terminal) or a plain line every
// plainEvery (in a log) shows the bytes read so far with an ETA.
const (
	quietFor   = time.Second
	plainEvery = 5 * time.Second
)

// openDataset opens spec like graph.Open, reporting progress on stderr
// while it loads (graph.LoadProgress).
func openDataset(ctx context.Context, spec, label string, stderr io.Writer) (*graph.Dataset, error) {
	return openDatasetEvery(ctx, spec, label, stderr, quietFor, plainEvery)
}

// openDatasetEvery is openDataset with its quiet time and log interval.
func openDatasetEvery(ctx context.Context, spec, label string, stderr io.Writer, quiet, every time.Duration) (*graph.Dataset, error) {
	return graph.OpenContext(graph.WithLoadProgress(ctx, graph.LoadProgress{W: stderr, Label: label, Quiet: quiet, Every: every}), spec)
}

// trackWrite runs work, showing on stderr the bytes this process writes
// against total (metrics.TrackIO).
func trackWrite(stderr io.Writer, label string, total int64, work func() error) error {
	return metrics.TrackIO(stderr, metrics.IOTrack{Label: label, Verb: "written", Total: total, Counter: "wchar", Quiet: quietFor, Every: plainEvery}, work)
}

// readBytes returns the bytes this process has read so far (rchar).
func readBytes() (int64, bool) { return metrics.IOCounter("rchar") }
