package formats

import (
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"

	"strata/core/graph"
	"strata/core/registry"
)

// synthFormat is format.synth: a generated stand-in of a graph that a
// seed paper trained on and that cannot be downloaded here.
type synthFormat struct{}

func init() { registry.Register(&synthFormat{}) }

func (*synthFormat) StrataModule() registry.ModuleInfo {
	return graph.FormatInfo("synth", "a generated stand-in of a published graph (its node, edge, feature, class and split counts; the degree shape of a real graph of its kind; see docs/datasets.md): "+synthForm,
		func() *synthFormat { return &synthFormat{} })
}

const synthForm = "synth:<name>[:<divisor>[:<seed>]][:communities=<k>:mu=<fraction>]"

// quarterSplit is HongTu's split of graphs without labels (§6: random
// labels, 25% train, 50% validation, 25% test).
func quarterSplit(s graph.StandIn) graph.StandIn {
	s.Train, s.Valid = s.Nodes/4, s.Nodes/2
	s.Test = s.Nodes - s.Train - s.Valid
	return s
}

// standIns returns the graphs of the seed papers, with the counts their
// papers (and the graphs' own sites) state, and the degree shape of a
// real graph of the same kind measured in shared/data with `strata
// inspect` (its shape line: the endpoint shares of the top 1% and 10% of
// nodes by in- plus out-degree). A function, so that no caller can change
// the catalogue.
func standIns() []graph.StandIn {
	var (
		citationShape = graph.DegreeShape{Top1: 0.112, Top10: 0.489} // PubMed (citations)
		purchaseShape = graph.DegreeShape{Top1: 0.141, Top10: 0.421} // Amazon Computers (co-purchases)
		socialShape   = graph.DegreeShape{Top1: 0.230, Top10: 0.641} // soc-Slashdot0902 (friend/foe links)
		followShape   = graph.DegreeShape{Top1: 0.144, Top10: 0.490} // ego-Twitter (follows)
		webShape      = graph.DegreeShape{Top1: 0.313, Top10: 0.573} // cnr-2000 (a LAW web crawl, as it-2004 and uk-2006-05)
	)
	return []graph.StandIn{
		{Name: "ogbn-arxiv", Nodes: 169_343, Edges: 1_166_243, Directed: true, FeatDim: 128, Classes: 40,
			Train: 90_941, Valid: 29_799, Test: 48_603, Shape: citationShape,
			Source: "OGB (Hu et al., NeurIPS 2020); Betty Table 4 counts both directions (2,315,598); degree shape of PubMed"},
		{Name: "ogbn-products", Nodes: 2_449_029, Edges: 61_859_140, FeatDim: 100, Classes: 47,
			Train: 196_615, Valid: 39_323, Test: 2_213_091, Shape: purchaseShape,
			Source: "OGB (Hu et al., NeurIPS 2020); HongTu Table 4, HyScale-GNN Table III, Betty Table 4; degree shape of Amazon Computers"},
		{Name: "reddit", Nodes: 232_965, Edges: 57_307_946, FeatDim: 602, Classes: 41,
			Train: 153_431, Valid: 23_831, Test: 55_703, Shape: socialShape,
			Source: "Hamilton et al., NeurIPS 2017; HongTu Table 4 and Betty Table 4 count both directions (114,615,892); degree shape of soc-Slashdot0902"},
		{Name: "ogbn-papers100M", Nodes: 111_059_956, Edges: 1_615_685_872, Directed: true, FeatDim: 128, Classes: 172,
			Train: 1_207_179, Valid: 125_265, Test: 214_338, Shape: citationShape,
			Source: "OGB (Hu et al., NeurIPS 2020); HyScale-GNN Table III, XGNN Table 3, data tiering Table 1 (both directions); degree shape of PubMed"},
		{Name: "mag240m-homo", Nodes: 121_751_666, Edges: 1_297_748_926, Directed: true, FeatDim: 756, Classes: 153,
			Train: 1_112_392, Valid: 138_949, Test: 88_092, Shape: citationShape,
			Source: "OGB-LSC MAG240M, its paper-to-paper graph as HyScale-GNN Table III states it; degree shape of PubMed"},
		quarterSplit(graph.StandIn{Name: "it-2004", Nodes: 41_291_594, Edges: 1_150_725_436, Directed: true, FeatDim: 256, Classes: 64,
			Shape: webShape, Source: "LAW (Boldi and Vigna, WWW 2004); HongTu Table 4 (random features and labels, 25/50/25 split); degree shape of cnr-2000"}),
		quarterSplit(graph.StandIn{Name: "uk-2006-05", Nodes: 77_741_046, Edges: 2_965_197_340, Directed: true, FeatDim: 256, Classes: 64,
			Shape: webShape, Source: "LAW; XGNN Table 3 (random features; labels and split as HongTu's); degree shape of cnr-2000"}),
		quarterSplit(graph.StandIn{Name: "friendster", Nodes: 65_608_366, Edges: 1_806_067_135, FeatDim: 256, Classes: 64,
			Shape: socialShape, Source: "SNAP com-Friendster (Yang and Leskovec, ICDM 2012); HongTu Table 4 (random features and labels, 25/50/25 split); degree shape of soc-Slashdot0902"}),
		quarterSplit(graph.StandIn{Name: "twitter", Nodes: 41_652_230, Edges: 1_468_365_182, Directed: true, FeatDim: 256, Classes: 64,
			Shape: followShape, Source: "Kwak et al., WWW 2010; XGNN Table 3 (random features; labels and split as HongTu's); degree shape of ego-Twitter"}),
	}
}

// StandInNames lists the stand-ins' names.
func StandInNames() []string {
	all := standIns()
	names := make([]string, len(all))
	for i, s := range all {
		names[i] = s.Name
	}
	return names
}

// Detect takes "synth:..." when no file of that name exists; Open
// applies a split after '@'.
func (*synthFormat) Detect(spec string, st fs.FileInfo) int {
	if st == nil && strings.HasPrefix(spec, "synth:") && !strings.Contains(spec, "@") {
		return graph.DetectPrefix
	}
	return 0
}

// parseSynth parses a synth spec into its stand-in and options: the
// positional divisor and seed, then the keyed community options.
func parseSynth(spec string) (graph.StandIn, graph.StandInOptions, error) {
	o := graph.StandInOptions{Divisor: 1}
	rest, _ := strings.CutPrefix(spec, "synth:")
	fields := strings.Split(rest, ":")
	all := standIns()
	i := slices.IndexFunc(all, func(s graph.StandIn) bool { return strings.EqualFold(s.Name, fields[0]) })
	if i < 0 {
		return graph.StandIn{}, o, graph.FileErrorf(graph.ErrMissing, spec, 0, 0, "no stand-in named %q; the known ones are %s (the form is %s)",
			fields[0], strings.Join(StandInNames(), ", "), synthForm)
	}
	pos := fields[1:]
	keyed := slices.IndexFunc(pos, func(f string) bool { return strings.Contains(f, "=") })
	if keyed >= 0 {
		pos, fields = pos[:keyed], pos[keyed:]
	} else {
		fields = nil
	}
	if len(pos) > 2 {
		return graph.StandIn{}, o, graph.FileErrorf(graph.ErrFormat, spec, 0, 0, "%d fields after the name before the keyed options, at most 2 (divisor, seed); the form is %s", len(pos), synthForm)
	}
	if len(pos) > 0 {
		v, err := strconv.ParseInt(pos[0], 10, 64)
		if err != nil || v < 1 {
			return graph.StandIn{}, o, graph.FileErrorf(graph.ErrFormat, spec, 0, 0, "divisor %q is not a positive integer; the form is %s, e.g. synth:ogbn-products:16", pos[0], synthForm)
		}
		o.Divisor = v
	}
	if len(pos) > 1 {
		v, err := strconv.ParseUint(pos[1], 10, 64)
		if err != nil {
			return graph.StandIn{}, o, graph.FileErrorf(graph.ErrFormat, spec, 0, 0, "seed %q is not a non-negative integer; the form is %s", pos[1], synthForm)
		}
		o.Seed = v
	}
	if err := parseCommunities(spec, fields, &o); err != nil {
		return graph.StandIn{}, o, err
	}
	return all[i], o, nil
}

// parseCommunities parses the keyed fields of a synth spec
// (communities=<k>, mu=<fraction>; both or neither) into o.
func parseCommunities(spec string, fields []string, o *graph.StandInOptions) error {
	bad := func(format string, args ...any) error {
		return graph.FileErrorf(graph.ErrFormat, spec, 0, 0, format+"; the form is %s, e.g. synth:ogbn-products:4:0:communities=1024:mu=0.2", append(args, synthForm)...)
	}
	seen := map[string]bool{}
	for _, f := range fields {
		key, val, ok := strings.Cut(f, "=")
		if !ok {
			return bad("field %q after a keyed option is not key=value (the divisor and seed come first)", f)
		}
		if seen[key] {
			return bad("%s given twice", key)
		}
		seen[key] = true
		switch key {
		case "communities":
			v, err := strconv.Atoi(val)
			if err != nil || v < 2 {
				return bad("communities=%q is not an integer of 2 or more", val)
			}
			o.Communities = v
		case "mu":
			v, err := strconv.ParseFloat(val, 64)
			if err != nil || !(v >= 0 && v <= 1) {
				return bad("mu=%q is not a fraction in [0, 1] (the share of each node's edges that leave its community)", val)
			}
			o.Mu = v
		default:
			return bad("unknown option %q (the options are communities and mu)", key)
		}
	}
	if seen["communities"] != seen["mu"] {
		return bad("communities and mu go together (give both)")
	}
	return nil
}

// communitySuffix names the community options in a dataset's name
// (sep "-") or source (sep ":"); empty without communities.
func communitySuffix(o graph.StandInOptions, sep string) string {
	if o.Communities == 0 {
		return ""
	}
	mu := strconv.FormatFloat(o.Mu, 'g', -1, 64)
	if sep == "-" {
		return fmt.Sprintf("-c%d-mu%s", o.Communities, mu)
	}
	return fmt.Sprintf(":communities=%d:mu=%s", o.Communities, mu)
}

func (*synthFormat) Open(spec string, lo graph.LoadOptions) (*graph.Dataset, error) {
	s, o, err := parseSynth(spec)
	if err != nil {
		return nil, err
	}
	if err := graph.CheckBudget(spec, "generating the stand-in", graph.StandInBytes(s, o), graph.BudgetOr(lo.Budget)); err != nil {
		return nil, err
	}
	d, err := graph.GenerateStandIn(s, o)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", spec, err)
	}
	d.Name = fmt.Sprintf("synth-%s-%d-%d", s.Name, o.Divisor, o.Seed) + communitySuffix(o, "-")
	d.Source = fmt.Sprintf("synth:%s:%d:%d", s.Name, o.Divisor, o.Seed) + communitySuffix(o, ":")
	model := "Chung-Lu degrees, R-MAT-style labels and features"
	if o.Communities > 0 {
		model = fmt.Sprintf("Chung-Lu degrees, %d planted communities with mixing mu = %g, labels the communities' classes", o.Communities, o.Mu)
	}
	d.Citation = "stand-in generated by strata (" + model + ") for " + s.Name + ": " + s.Source
	return d, nil
}

// Generator describes the stand-in with every parameter, for provenance.
func (*synthFormat) Generator(spec string) (string, error) {
	s, o, err := parseSynth(spec)
	if err != nil {
		return "", err
	}
	gen := fmt.Sprintf("graph.GenerateStandIn(%s): %d nodes / %d, %d edges / %d (directed %v), %d features, %d classes, split %d/%d/%d, shape top1 %g top10 %g, seed %d",
		spec, s.Nodes, o.Divisor, s.Edges, o.Divisor, s.Directed, s.FeatDim, s.Classes, s.Train, s.Valid, s.Test, s.Shape.Top1, s.Shape.Top10, o.Seed)
	if o.Communities > 0 {
		gen += fmt.Sprintf(", %d communities, mu %g", o.Communities, o.Mu)
	}
	return gen, nil
}

func (*synthFormat) Supports() graph.Support {
	return graph.Support{Spec: synthForm + " (" + strings.Join(StandInNames(), ", ") + ")", Budget: true}
}

func (*synthFormat) Examples(string) ([]graph.Example, error) {
	return []graph.Example{{Name: "arxiv-small", Spec: "synth:ogbn-arxiv:256:3"},
		{Name: "unknown", Spec: "synth:ogbn-nope", Kind: graph.ErrMissing, Err: []string{"synth:ogbn-nope", "ogbn-products", "friendster"}},
		{Name: "bad divisor", Spec: "synth:reddit:0", Kind: graph.ErrFormat, Err: []string{"synth:reddit:0", "divisor"}},
		{Name: "communities", Spec: "synth:ogbn-arxiv:256:3:communities=40:mu=0.3"},
		{Name: "bad mu", Spec: "synth:ogbn-arxiv:256:3:communities=40:mu=1.5", Kind: graph.ErrFormat, Err: []string{"synth:ogbn-arxiv:256:3:communities=40:mu=1.5", "mu=\"1.5\""}},
		{Name: "mu alone", Spec: "synth:ogbn-arxiv:256:mu=0.3", Kind: graph.ErrFormat, Err: []string{"communities and mu go together"}},
		{Name: "fewer communities than classes", Spec: "synth:ogbn-arxiv:256:3:communities=8:mu=0.3", Kind: graph.ErrRange, Err: []string{"synth:ogbn-arxiv:256:3:communities=8:mu=0.3", "fewer than the 40 classes"}},
		{Name: "huge", Spec: "synth:ogbn-papers100M", Kind: graph.ErrRange, Err: []string{"synth:ogbn-papers100M", "memory budget"}, Huge: true}}, nil
}
