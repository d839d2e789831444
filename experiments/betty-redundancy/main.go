// Command betty-redundancy reproduces Betty's redundancy table: a batch of
// every training node, its 2-layer blocks sampled with fanouts (10, 25),
// split into K micro-batches by each partitioner, and the input nodes the
// micro-batches load altogether over those of the whole batch.
//
//	go run ./experiments/betty-redundancy -out experiments/results/betty-redundancy
//
// It writes redundancy.csv, one SVG per dataset and a JSON summary line.
package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"flag"
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"strata/core/config"
	"strata/core/train"

	_ "strata/partitioners"
	_ "strata/plugins/sampler"
)

// base is the config every run starts from; -data sets data.dataset.
const base = `
[data]
dataset = "embedded:cora"
[model]
name = "sage"
layers = 2
[sampler]
name = "uniform"
fanouts = [10, 25]
`

type row struct {
	Dataset     string    `json:"dataset"`
	Partitioner string    `json:"partitioner"`
	K           int       `json:"k"`
	Inputs      int64     `json:"batch_inputs"`
	Redundancy  float64   `json:"redundancy"` // micro-batch inputs / batch inputs
	Layers      []float64 `json:"layer_redundancy"`
	TimeS       float64   `json:"time_s"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "betty-redundancy:", err)
		os.Exit(2)
	}
}

func run() error {
	data := flag.String("data", "../shared/data/coauthor-physics@random-20-30-seed0,rmat-20-16-128-16-0", "comma-separated dataset specs")
	ks := flag.String("k", "2,4,8,16,32", "comma-separated micro-batch counts")
	parts := flag.String("partitioners", "range,random,metis,betty-reg", "comma-separated partitioners")
	out := flag.String("out", "experiments/results/betty-redundancy", "output directory")
	flag.Parse()
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	ctx := context.Background()
	var rows []row
	for _, ds := range strings.Split(*data, ",") {
		for _, p := range strings.Split(*parts, ",") {
			for _, kt := range strings.Split(*ks, ",") {
				k, err := strconv.Atoi(kt)
				if err != nil {
					return fmt.Errorf("-k: %w", err)
				}
				abs := ds
				if !strings.HasPrefix(ds, "rmat-") && !strings.HasPrefix(ds, "embedded:") {
					if abs, err = filepath.Abs(ds); err != nil {
						return err
					}
				}
				cfg, err := config.Parse("betty-redundancy.toml", []byte(base),
					fmt.Sprintf("data.dataset=%q", abs), fmt.Sprintf("partition.name=%q", p))
				if err != nil {
					return err
				}
				t0 := time.Now()
				rep, err := train.Partition(ctx, cfg, k, true)
				if err != nil {
					return fmt.Errorf("%s %s k=%d: %w", ds, p, k, err)
				}
				r := row{Dataset: rep.Dataset, Partitioner: p, K: k, Redundancy: rep.LayerRedundancy[0], Layers: rep.LayerRedundancy, TimeS: rep.TimeS}
				rows = append(rows, r)
				fmt.Fprintf(os.Stderr, "%-20s %-10s k=%-3d redundancy %.3f (layers %.3f) partition %.2fs, total %.1fs\n",
					r.Dataset, p, k, r.Redundancy, r.Layers, r.TimeS, time.Since(t0).Seconds())
			}
		}
	}
	if err := writeCSV(filepath.Join(*out, "redundancy.csv"), rows); err != nil {
		return err
	}
	if err := plotAll(*out, rows); err != nil {
		return err
	}
	summary := summarize(rows)
	line, _ := json.Marshal(summary)
	fmt.Println(string(line))
	return os.WriteFile(filepath.Join(*out, "summary.json"), append(line, '\n'), 0o644)
}

func writeCSV(path string, rows []row) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	w := csv.NewWriter(f)
	w.Write([]string{"dataset", "partitioner", "k", "redundancy", "redundancy_layer1", "partition_time_s"})
	for _, r := range rows {
		l1 := ""
		if len(r.Layers) > 1 {
			l1 = strconv.FormatFloat(r.Layers[1], 'f', 4, 64)
		}
		w.Write([]string{r.Dataset, r.Partitioner, strconv.Itoa(r.K), strconv.FormatFloat(r.Redundancy, 'f', 4, 64), l1, strconv.FormatFloat(r.TimeS, 'f', 4, 64)})
	}
	w.Flush()
	return w.Error()
}

// summary reports, per dataset, whether betty-reg loads the fewest
// redundant inputs at every K >= 4 and by how much it beats the best other
// partitioner on average (redundant inputs = redundancy - 1, in units of
// the batch's inputs).
type summary struct {
	Datasets map[string]datasetSummary `json:"datasets"`
}

type datasetSummary struct {
	BettyFewestAtKGe4      bool    `json:"betty_fewest_at_k_ge_4"`
	FewerRedundantVsBestPc float64 `json:"fewer_redundant_vs_best_other_pct"`
	FewerRedundantVsRandom float64 `json:"fewer_redundant_vs_random_pct"`
}

func summarize(rows []row) summary {
	s := summary{Datasets: map[string]datasetSummary{}}
	by := map[string]map[int]map[string]float64{}
	for _, r := range rows {
		if by[r.Dataset] == nil {
			by[r.Dataset] = map[int]map[string]float64{}
		}
		if by[r.Dataset][r.K] == nil {
			by[r.Dataset][r.K] = map[string]float64{}
		}
		by[r.Dataset][r.K][r.Partitioner] = r.Redundancy - 1
	}
	for ds, ks := range by {
		d := datasetSummary{BettyFewestAtKGe4: true}
		n := 0
		for k, ps := range ks {
			betty, ok := ps["betty-reg"]
			if !ok {
				continue
			}
			best := -1.0
			for p, v := range ps {
				if p != "betty-reg" && (best < 0 || v < best) {
					best = v
				}
				if p != "betty-reg" && k >= 4 && v <= betty {
					d.BettyFewestAtKGe4 = false
				}
			}
			if best > 0 {
				d.FewerRedundantVsBestPc += 100 * (1 - betty/best)
			}
			if rnd := ps["random"]; rnd > 0 {
				d.FewerRedundantVsRandom += 100 * (1 - betty/rnd)
			}
			n++
		}
		if n > 0 {
			d.FewerRedundantVsBestPc /= float64(n)
			d.FewerRedundantVsRandom /= float64(n)
		}
		s.Datasets[ds] = d
	}
	return s
}

func plotAll(dir string, rows []row) error {
	datasets := map[string][]row{}
	var order []string
	for _, r := range rows {
		if datasets[r.Dataset] == nil {
			order = append(order, r.Dataset)
		}
		datasets[r.Dataset] = append(datasets[r.Dataset], r)
	}
	colors := []color.RGBA{{31, 119, 180, 255}, {255, 127, 14, 255}, {44, 160, 44, 255}, {214, 39, 40, 255}, {148, 103, 189, 255}}
	for _, ds := range order {
		p := plot.New()
		p.Title.Text = "Input redundancy of micro-batches: " + ds
		p.X.Label.Text = "micro-batches K"
		p.Y.Label.Text = "inputs loaded / inputs of the batch"
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
		series := map[string]plotter.XYs{}
		var names []string
		for _, r := range datasets[ds] {
			if series[r.Partitioner] == nil {
				names = append(names, r.Partitioner)
			}
			series[r.Partitioner] = append(series[r.Partitioner], plotter.XY{X: float64(r.K), Y: r.Redundancy})
		}
		for i, name := range names {
			l, pts, err := plotter.NewLinePoints(series[name])
			if err != nil {
				return err
			}
			l.Color, pts.Color = colors[i%len(colors)], colors[i%len(colors)]
			p.Add(l, pts)
			p.Legend.Add(name, l, pts)
		}
		p.Legend.Top, p.Legend.Left = true, true
		file := filepath.Join(dir, "redundancy-"+strings.NewReplacer("/", "_", "@", "_").Replace(ds)+".svg")
		if err := p.Save(6*vg.Inch, 4*vg.Inch, file); err != nil {
			return err
		}
	}
	return nil
}
