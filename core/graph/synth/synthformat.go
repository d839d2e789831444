package synth

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
func parseSynth(spec string) (StandIn, StandInOptions, error) {
	o := StandInOptions{Divisor: 1}
	rest, _ := strings.CutPrefix(spec, "synth:")
	fields := strings.Split(rest, ":")
	all := standIns()
	i := slices.IndexFunc(all, func(s StandIn) bool { return strings.EqualFold(s.Name, fields[0]) })
	if i < 0 {
		return StandIn{}, o, graph.FileErrorf(graph.ErrMissing, spec, 0, 0, "no stand-in named %q; the known ones are %s (the form is %s)",
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
		return StandIn{}, o, graph.FileErrorf(graph.ErrFormat, spec, 0, 0, "%d fields after the name before the keyed options, at most 2 (divisor, seed); the form is %s", len(pos), synthForm)
	}
	if len(pos) > 0 {
		v, err := strconv.ParseInt(pos[0], 10, 64)
		if err != nil || v < 1 {
			return StandIn{}, o, graph.FileErrorf(graph.ErrFormat, spec, 0, 0, "divisor %q is not a positive integer; the form is %s, e.g. synth:ogbn-products:16", pos[0], synthForm)
		}
		o.Divisor = v
	}
	if len(pos) > 1 {
		v, err := strconv.ParseUint(pos[1], 10, 64)
		if err != nil {
			return StandIn{}, o, graph.FileErrorf(graph.ErrFormat, spec, 0, 0, "seed %q is not a non-negative integer; the form is %s", pos[1], synthForm)
		}
		o.Seed = v
	}
	if err := parseCommunities(spec, fields, &o); err != nil {
		return StandIn{}, o, err
	}
	return all[i], o, nil
}

// parseCommunities parses the keyed fields of a synth spec
// (communities=<k>, mu=<fraction>; both or neither) into o.
func parseCommunities(spec string, fields []string, o *StandInOptions) error {
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
func communitySuffix(o StandInOptions, sep string) string {
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
	if err := graph.CheckBudget(spec, "generating the stand-in", StandInBytes(s, o), graph.BudgetOr(lo.Budget)); err != nil {
		return nil, err
	}
	d, err := GenerateStandIn(s, o)
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

// Generator describes the stand-in with every parameter, for provenance,
// under the generator's name from before it left core/graph
// ("graph.GenerateStandIn"), so that published provenance stays the same.
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
