package config

import (
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
		} else if _, err := graph.ParseEdgeSplit(sp); err != nil {
			d.errorf([]string{"data", "edge_split"}, "data.edge_split: %v", err)
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
// its seed.
func (c *Config) EdgeSplitSpec() (graph.EdgeSplitSpec, error) {
	name := c.Data.EdgeSplit
	if name == "" {
		name = "random-85-5-10"
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
