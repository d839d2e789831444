package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"strata/core/graph"
	"strata/core/registry"
)

// checkLink checks the keys of link prediction: data.edge_split's form,
// and that the keys of a link task are not set on another task, where
// nothing would read them.
func (d *decoder) checkLink(c *Config) {
	link := c.Train.Task == TaskLink
	if sp := c.Data.EdgeSplit; sp != "" {
		if !link {
			d.errorf([]string{"data", "edge_split"}, "data.edge_split = %q splits edges for link prediction, and train.task = %q; set train.task = \"link\" or remove data.edge_split", sp, c.Train.Task)
		} else if graph.IsRandomEdgeSplit(sp) {
			if _, err := graph.ParseEdgeSplit(sp); err != nil {
				d.errorf([]string{"data", "edge_split"}, "data.edge_split: %v", err)
			}
		} else if sp == "." || sp == ".." {
			d.errorf([]string{"data", "edge_split"}, "data.edge_split = %q: want %s, the name of a split the dataset ships (its split_edge/<name>/) or the path of a split directory or .npz file", sp, graph.EdgeSplitForm)
		} else if c.Data.Reorder != "none" && c.Data.Reorder != "" {
			d.errorf([]string{"data", "reorder"}, "data.reorder = %q renumbers the nodes, and data.edge_split = %q is a shipped split, which names them by the dataset's ids; set data.reorder = \"none\" (or use a generated split, random-...)", c.Data.Reorder, sp)
		}
	}
	if !link {
		if !c.Link.IsDefault() {
			d.errorf([]string{"link"}, "[link] configures link prediction, and train.task = %q; set train.task = \"link\" or remove [link]", c.Train.Task)
		}
		if c.Negative.ID != "" {
			d.errorf([]string{"negative"}, "[negative] draws the negatives of link prediction, and train.task = %q; set train.task = \"link\" or remove [negative]", c.Train.Task)
		}
		return
	}
	if c.Train.Task == TaskLink && c.Data.Split != "" {
		d.errorf([]string{"data", "split"}, "data.split = %q splits nodes, and train.task = \"link\" splits edges; use data.edge_split instead", c.Data.Split)
	}
	name := c.Link.Decoder
	switch {
	case name == "":
		d.errorf([]string{"link", "decoder"}, "link.decoder must not be empty: name a decoder (%s) or a .wasm file", available("decoder"))
	case strings.HasSuffix(name, ".wasm"):
	case len(pluginNames("decoder")) > 0:
		// Decoder modules are registered by the WASM host; without it
		// (a build that does not link it) train checks the name.
		if _, err := registry.Lookup("decoder." + name); err != nil {
			msg := "link.decoder = %q: unknown decoder"
			if sug := registry.Suggest(name, pluginNames("decoder")); sug != "" {
				msg += " (did you mean \"" + sug + "\"?)"
			}
			d.errorf([]string{"link", "decoder"}, msg+"; %s, or a path to a .wasm decoder module", name, available("decoder"))
		}
	}
}

// EdgeSplitSpec returns data.edge_split of a link task, parsed, with its
// default ("random-85-5-10") and, when the name gives none, train.seed as
// its seed. A split the dataset ships has its location in Source
// (ShippedEdgeSplit) and train.seed, which draws the negatives it does
// not give.
func (c *Config) EdgeSplitSpec() (graph.EdgeSplitSpec, error) {
	name := c.Data.EdgeSplit
	if name == "" {
		name = "random-85-5-10"
	}
	if !graph.IsRandomEdgeSplit(name) {
		src, err := c.shippedEdgeSplit(name)
		return graph.EdgeSplitSpec{Seed: uint64(c.Train.Seed), SeedSet: true, Source: src}, err
	}
	s, err := graph.ParseEdgeSplit(name)
	if err != nil {
		return s, c.KeyError(err.Error(), "data", "edge_split")
	}
	if !s.SeedSet {
		s.Seed = uint64(c.Train.Seed)
	}
	return s, nil
}

// shippedEdgeSplit returns where the shipped split name is: a path (with
// a separator, or a .npz file) resolved like data.dataset, or a name,
// split_edge/<name> of the dataset's directory.
func (c *Config) shippedEdgeSplit(name string) (string, error) {
	if strings.ContainsAny(name, `/\`) || strings.HasSuffix(name, ".npz") {
		return c.resolveKey(name, "data", "edge_split"), nil
	}
	ds := c.resolveKey(c.Data.Dataset, "data", "dataset")
	if i := strings.LastIndexByte(ds, '@'); i > 0 && !graph.IsDir(ds) {
		ds = ds[:i] // dir@<node split>
	}
	if !graph.IsDir(ds) {
		return "", c.KeyError(fmt.Sprintf("data.edge_split = %q names a split of the dataset's directory (split_edge/%s/), and data.dataset = %q is no directory; give the split's path (a directory of .npy pairs or a .npz file, e.g. \"./%s\"), or %s", name, name, c.Data.Dataset, name, graph.EdgeSplitForm), "data", "edge_split")
	}
	dir := filepath.Join(ds, "split_edge", name)
	if !graph.IsDir(dir) {
		avail := "it has none"
		if es, err := os.ReadDir(filepath.Join(ds, "split_edge")); err == nil && len(es) > 0 {
			var names []string
			for _, e := range es {
				names = append(names, e.Name())
			}
			avail = "available: " + strings.Join(names, ", ")
		}
		return "", c.KeyError(fmt.Sprintf("data.edge_split = %q: %s does not exist (%s); name a split under split_edge/, give a split's path, or %s", name, dir, avail, graph.EdgeSplitForm), "data", "edge_split")
	}
	return dir, nil
}
