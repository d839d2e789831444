package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"strata/core/caching"
	"strata/core/graph"
	"strata/core/graph/formats"
	"strata/core/registry"
	"strata/core/safefile"
	"strata/core/store"
	"strata/plugins/cache"
	"strata/plugins/sampler"
)

// hitScores returns the registered static cache policies that rank
// nodes (tiering Fig. 7's score functions, and any policy added since),
// by name, in registry order; a policy whose full ranking is empty
// (cache.none) is left out of the curves.
func hitScores() []string {
	var out []string
	for _, m := range registry.Namespace("cache") {
		inst := m.New()
		_, static := inst.(caching.Policy)
		_, sized := inst.(caching.Sized)
		if static && sized {
			out = append(out, m.Name())
		}
	}
	return out
}

// dynamicCaches returns the registered online caches by name.
func dynamicCaches() []string {
	var out []string
	for _, m := range registry.Namespace("cache") {
		if _, ok := m.New().(caching.Dynamic); ok {
			out = append(out, m.Name())
		}
	}
	return out
}

// cmdHitRatio measures tiering Fig. 7 (the share of feature reads served
// by the top X% of nodes under each score) and the host->device feature
// traffic of one epoch with 0/5/10/25% of the rows cached on one simulated
// device.
func cmdHitRatio(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	fs := newFlags("hitratio", "-i DATASET -o DIR [--name NAME] [--traffic]", stderr)
	in := fs.String("i", "", "dataset spec (an OGB directory, rmat-18, ...)")
	outDir := fs.String("o", "", "directory for NAME-hitratio.csv/.svg and NAME-traffic.csv (required; the published figures use docs/figures)")
	name := fs.String("name", "", "file name prefix (default: the dataset name)")
	fanoutsS := fs.String("fanouts", "10,10,10", "sampler.uniform fanouts, first layer first")
	batch := fs.Int("batch", 1024, "seed nodes per mini-batch")
	seed := fs.Uint64("seed", 1, "seed of the measured epoch (each score ranks with its own options' defaults, as the experiment kind hitratio does)")
	epochs := fs.Int("epochs", 1, "measured epochs whose reads the curves count (the traffic table uses the first)")
	traffic := fs.Bool("traffic", true, "also measure the host->device feature bytes through the tiered store")
	symmetrize := fs.Bool("symmetrize", true, "sample the undirected graph (add reverse edges), as training does with data.symmetrize")
	synthTrain := fs.Float64("synth-train", 0, "for a dataset without a training split: a seeded random fraction of the nodes as training nodes")
	synthFeatures := fs.Int("synth-features", 0, "for a dataset without features: random features of this width (sizes the traffic table)")
	var maxMem memFlag
	registerMaxMemory(fs, &maxMem)
	if err := parse(fs, args); err != nil {
		return err
	}
	if *in == "" {
		return usagef("hitratio: -i DATASET is required (e.g. -i rmat-18)")
	}
	if *outDir == "" {
		return usagef("hitratio: -o DIR is required: the directory for NAME-hitratio.csv/.svg and NAME-traffic.csv (e.g. -o docs/figures from the repository root)")
	}
	fanouts, err := parseInts(*fanoutsS)
	if err != nil {
		return usagef("hitratio: --fanouts: %v", err)
	}
	inputs := formats.InputFiles(*in) // no output may replace one
	d, err := openDataset(withMaxMemory(ctx, maxMem), *in, "hitratio: loading", stderr)
	if err != nil {
		return err
	}
	if *name == "" {
		*name = d.Name
	}
	if err := prepareHitDataset(d, *symmetrize, *synthTrain, *synthFeatures, *seed); err != nil {
		return err
	}
	seeds := d.Train
	if len(seeds) == 0 {
		return fmt.Errorf("hitratio: %s has no training split; give --synth-train FRACTION to draw one", d.Name)
	}
	smp := &sampler.Uniform{Fanouts: fanouts}
	cleanup, err := registry.Ready(ctx, smp)
	if err != nil {
		return usagef("hitratio: %v", err)
	}
	defer joinCleanup(&err, cleanup)
	fmt.Fprintf(stdout, "%s: %d nodes, %d edges, %d training nodes, %d features; fanouts %v, batch %d\n",
		d.Name, d.NumNodes, d.Graph.NNZ(), len(seeds), d.FeatDim, fanouts, *batch)

	t0 := time.Now()
	if *epochs < 1 {
		return usagef("hitratio: --epochs %d: must be >= 1", *epochs)
	}
	reads, err := cache.MeasureReads(ctx, d.Graph, seeds, smp, *batch, *epochs, *seed)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%d measured epoch(s) sampled in %.1fs\n", *epochs, time.Since(t0).Seconds())

	ranks, series, err := rankAll(ctx, d, reads, stdout)
	if err != nil {
		return err
	}
	base := filepath.Join(*outDir, *name)
	title := fmt.Sprintf("%s: feature reads served by the top X%% (fanouts %v)", *name, fanouts)
	if err := writeHitCurves(stdout, *outDir, base, title, reads, ranks, series, inputs); err != nil {
		return err
	}
	if !*traffic {
		return nil
	}
	if d.FeatDim == 0 {
		return fmt.Errorf("hitratio: %s has no features to move", d.Name)
	}
	return trafficTable(ctx, stdout, base+"-traffic.csv", d, reads.Batches, ranks, inputs...)
}

// prepareHitDataset symmetrizes d's graph and draws the training split
// and features a dataset without them is measured with.
func prepareHitDataset(d *graph.Dataset, symmetrize bool, synthTrain float64, synthFeatures int, seed uint64) error {
	if symmetrize {
		d.Graph = graph.Symmetrize(d.Graph.Unweighted())
	}
	if len(d.Train) == 0 && synthTrain > 0 {
		if synthTrain > 1 {
			return usagef("hitratio: --synth-train %v: want a fraction in (0,1]", synthTrain)
		}
		d.Train = graph.RandomNodes(d.NumNodes, synthTrain, seed)
	}
	if d.FeatDim == 0 && synthFeatures > 0 {
		d.FeatDim = synthFeatures
		d.Features = make([]float32, d.NumNodes*d.FeatDim)
		for i := range d.Features {
			d.Features[i] = float32(i%7) / 7
		}
	}
	return nil
}

// rankAll ranks d's nodes under every registered static score that ranks
// anything, and the oracle (the measured read counts); series lists them
// in that order.
func rankAll(ctx context.Context, d *graph.Dataset, reads *cache.Reads, stdout io.Writer) (ranks map[string][]int32, series []string, err error) {
	ranks = map[string][]int32{}
	for _, s := range hitScores() {
		t0 := time.Now()
		r, err := fullRanking(ctx, s, d)
		if err != nil {
			return nil, nil, err
		}
		if len(r) == 0 {
			continue // ranks nothing (cache.none)
		}
		ranks[s] = r
		series = append(series, s)
		fmt.Fprintf(stdout, "%-20s ranked in %.2fs\n", s, time.Since(t0).Seconds())
	}
	ranks["oracle"] = cache.RankByScore(reads.Counts, d.NumNodes)
	return ranks, append(series, "oracle"), nil
}

// writeHitCurves writes the hit-ratio curves (base-hitratio.csv and .svg)
// of every series for the top 1..50% and prints their table.
func writeHitCurves(stdout io.Writer, outDir, base, title string, reads *cache.Reads, ranks map[string][]int32, series, inputs []string) error {
	pcts := make([]float64, 50)
	for i := range pcts {
		pcts[i] = float64(i + 1)
	}
	curves := map[string][]float64{}
	for _, s := range series {
		curves[s] = reads.Curve(ranks[s], pcts)
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return err
	}
	var csv strings.Builder
	csv.WriteString("top_pct," + strings.Join(series, ",") + "\n")
	for i, p := range pcts {
		csv.WriteString(strconv.Itoa(int(p)))
		for _, s := range series {
			fmt.Fprintf(&csv, ",%.4f", curves[s][i])
		}
		csv.WriteString("\n")
	}
	if err := safefile.WriteFile(base+"-hitratio.csv", []byte(csv.String()), inputs...); err != nil {
		return err
	}
	if err := hitPlot(base+"-hitratio.svg", title, series, pcts, curves, inputs...); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nshare of feature reads served by the top X%% of nodes (%s-hitratio.csv/.svg)\n", base)
	fmt.Fprintf(stdout, "%-20s %7s %7s %7s %7s %7s\n", "score", "1%", "5%", "10%", "25%", "50%")
	for _, s := range series {
		c := curves[s]
		fmt.Fprintf(stdout, "%-20s %6.1f%% %6.1f%% %6.1f%% %6.1f%% %6.1f%%\n", s, 100*c[0], 100*c[4], 100*c[9], 100*c[24], 100*c[49])
	}
	return nil
}

// fullRanking returns the full ranking of a registered static policy
// with its registered options (cache.FullRanking: capacity all the
// nodes), as the experiment kind hitratio ranks a [cache] section that
// sets no options.
func fullRanking(ctx context.Context, name string, d *graph.Dataset) (rank []int32, err error) {
	p, err := registry.New[caching.Policy]("cache." + name)
	if err != nil {
		return nil, err
	}
	cleanup, err := registry.Ready(ctx, p.(registry.Module))
	if err != nil {
		return nil, err
	}
	defer joinCleanup(&err, cleanup)
	return cache.FullRanking(ctx, p, d)
}

// trafficTable runs the first measured epoch's batches (their
// blocks[0].Src) through a tiered store on one simulated pcie-only device
// for each score and hot capacity, and reports the host->device feature
// bytes (checked against the sim backend's link counter).
func trafficTable(ctx context.Context, stdout io.Writer, path string, d *graph.Dataset, batches [][]int32, ranks map[string][]int32, inputs ...string) error {
	caps := []float64{0, 5, 10, 25}
	var csv strings.Builder
	csv.WriteString("score,hot_pct,hot_rows,host_to_device_feature_bytes,hit_rate,reduction_vs_0\n")
	fmt.Fprintf(stdout, "\nhost->device feature bytes per epoch, one simulated pcie-only device (%s)\n", path)
	fmt.Fprintf(stdout, "%-20s %14s %14s %14s %14s   reduction at 5/10/25%%\n", "score", "0%", "5%", "10%", "25%")
	var zero int64
	dynamic := dynamicCaches()
	for _, s := range append(slices.Sorted(maps.Keys(ranks)), dynamic...) {
		if s == "oracle" {
			continue
		}
		bytes := make([]int64, len(caps))
		hits := make([]float64, len(caps))
		for ci, c := range caps {
			k := int(c / 100 * float64(d.NumNodes))
			var err error
			if slices.Contains(dynamic, s) {
				bytes[ci], hits[ci], err = dynamicTraffic(s, d, k, batches)
			} else {
				var tr store.EpochTraffic
				tr, err = store.MeasureEpoch(ctx, d.Features, d.FeatDim, ranks[s][:min(k, len(ranks[s]))], batches)
				bytes[ci], hits[ci] = tr.FeatureBytes, float64(tr.Local)/float64(max(tr.Rows, 1))
				debug.FreeOSMemory() // each store holds up to a quarter of the features
			}
			if err != nil {
				return fmt.Errorf("%s at %v%%: %w", s, c, err)
			}
			if ci == 0 && zero == 0 {
				zero = bytes[0]
			}
		}
		fmt.Fprintf(stdout, "%-20s", s)
		for _, b := range bytes {
			fmt.Fprintf(stdout, " %14d", b)
		}
		fmt.Fprintf(stdout, "   %5.1f%% %5.1f%% %5.1f%%\n", red(zero, bytes[1]), red(zero, bytes[2]), red(zero, bytes[3]))
		for ci, c := range caps {
			fmt.Fprintf(&csv, "%s,%g,%d,%d,%.4f,%.4f\n", s, c, int(c/100*float64(d.NumNodes)), bytes[ci], hits[ci], red(zero, bytes[ci])/100)
		}
	}
	return safefile.WriteFile(path, []byte(csv.String()), inputs...)
}

func red(zero, b int64) float64 {
	if zero == 0 {
		return 0
	}
	return 100 * (1 - float64(b)/float64(zero))
}

// dynamicTraffic replays the epoch's reads through an online cache
// (cache.lru, cache.clock, ...) holding k rows (cold start) and returns the missed rows'
// bytes and the hit rate.
func dynamicTraffic(name string, d *graph.Dataset, k int, batches [][]int32) (missed int64, hitRate float64, err error) {
	c, err := registry.New[caching.Dynamic]("cache." + name)
	if err != nil {
		return 0, 0, err
	}
	sized, ok := c.(caching.ByteSized)
	if !ok {
		return 0, 0, fmt.Errorf("cache.%s cannot be sized in bytes (caching.ByteSized)", name)
	}
	sized.SetBytes(int64(k) * int64(d.FeatDim) * 4)
	cleanup, err := registry.Ready(context.Background(), c.(registry.Module))
	if err != nil {
		return 0, 0, err
	}
	defer joinCleanup(&err, cleanup)
	hits, err := cache.Replay(c, d, batches)
	if err != nil {
		return 0, 0, err
	}
	reads := 0
	for _, ids := range batches {
		reads += len(ids)
	}
	return (int64(reads) - hits) * int64(d.FeatDim) * 4, float64(hits) / float64(max(reads, 1)), nil
}

// hitPlot writes the hit-ratio curves as SVG.
func hitPlot(path, title string, series []string, pcts []float64, curves map[string][]float64, inputs ...string) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "top X% of nodes (by score)"
	p.Y.Label.Text = "share of feature reads served"
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, 50, 0, 1
	p.Add(plotter.NewGrid())
	p.Legend.Top, p.Legend.Left = false, false
	p.Legend.XOffs, p.Legend.YOffs = -vg.Points(5), vg.Points(40)
	for i, s := range series {
		xy := make(plotter.XYs, len(pcts))
		for j := range pcts {
			xy[j].X, xy[j].Y = pcts[j], curves[s][j]
		}
		l, err := plotter.NewLine(xy)
		if err != nil {
			return err
		}
		l.Color = plotutil.Color(i)
		l.Dashes = plotutil.Dashes(i)
		l.Width = vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(s, l)
	}
	w, err := p.WriterTo(7*vg.Inch, 4.5*vg.Inch, "svg")
	if err != nil {
		return err
	}
	return safefile.Write(path, func(f io.Writer) error {
		_, err := w.WriteTo(f)
		return err
	}, inputs...)
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("%q is not a list of integers", s)
		}
		out = append(out, v)
	}
	return out, nil
}

// joinCleanup calls cleanup, a module's (registry.Ready), and joins its
// error to *err; deferred, after the module's last use.
func joinCleanup(err *error, cleanup func() error) {
	if cerr := cleanup(); cerr != nil {
		*err = errors.Join(*err, cerr)
	}
}
