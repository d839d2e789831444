package formats

import (
	"embed"
	"io/fs"
	"slices"
	"strings"

	"strata/core/graph"
	"strata/core/registry"
)

// embeddedData holds the datasets shipped inside the binary, in the OGB raw
// layout under datasets/<name>/.
//
//go:embed datasets/cora/raw datasets/cora/split datasets/cora/README.md
var embeddedData embed.FS

// EmbeddedNames lists the datasets available to LoadEmbedded.
func EmbeddedNames() []string {
	entries, _ := fs.ReadDir(embeddedData, "datasets")
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	return names
}

// LoadEmbedded loads a dataset shipped inside the binary ("cora"). Errors
// name files as "embedded:<name>/raw/...".
func LoadEmbedded(name string) (*graph.Dataset, error) {
	return (&embeddedFormat{}).Open("embedded:"+strings.TrimPrefix(name, "embedded:"), graph.LoadOptions{})
}

// embeddedFormat is format.embedded: "embedded:<name>".
type embeddedFormat struct{}

func init() { registry.Register(&embeddedFormat{}) }

func (*embeddedFormat) StrataModule() registry.ModuleInfo {
	return graph.FormatInfo("embedded", "a dataset shipped inside the binary, in the OGB raw layout: embedded:<name>",
		func() *embeddedFormat { return &embeddedFormat{} })
}

// Detect takes "embedded:<name>" whose name holds no '@' (the split).
func (*embeddedFormat) Detect(spec string, _ fs.FileInfo) int {
	if name, ok := strings.CutPrefix(spec, "embedded:"); ok && !strings.Contains(name, "@") {
		return graph.DetectPrefix
	}
	return 0
}

func (*embeddedFormat) Open(spec string, o graph.LoadOptions) (*graph.Dataset, error) {
	name := strings.TrimPrefix(spec, "embedded:")
	if name == "" || strings.ContainsAny(name, `/\.`) || !slices.Contains(EmbeddedNames(), name) {
		return nil, graph.FileErrorf(graph.ErrMissing, "embedded:"+name, 0, 0, "no such embedded dataset (available: %s)", strings.Join(EmbeddedNames(), ", "))
	}
	sub, err := fs.Sub(embeddedData, "datasets/"+name)
	if err != nil {
		return nil, graph.FileErrorf(graph.ErrMissing, "embedded:"+name, 0, 0, "%v", err)
	}
	o.Budget = 0 // shipped with the binary: its size was fixed when strata was built
	return loadOGBFS(sub, "embedded:"+name, "", o)
}

func (*embeddedFormat) Supports() graph.Support {
	return graph.Support{Spec: "embedded:<name> (e.g. embedded:cora)", Rows: true}
}
