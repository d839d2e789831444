package graph

import (
	"embed"
	"io/fs"
	"slices"
	"strata/core/registry"
	"strings"
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
func LoadEmbedded(name string) (*Dataset, error) {
	return (&embeddedFormat{}).Open("embedded:"+strings.TrimPrefix(name, "embedded:"), LoadOptions{})
}

// embeddedFormat is format.embedded: "embedded:<name>".
type embeddedFormat struct{}

func init() { registry.Register(&embeddedFormat{}) }

func (*embeddedFormat) StrataModule() registry.ModuleInfo {
	return formatInfo("embedded", "a dataset shipped inside the binary, in the OGB raw layout: embedded:<name>",
		func() *embeddedFormat { return &embeddedFormat{} })
}

// Detect takes "embedded:<name>" whose name holds no '@' (the split).
func (*embeddedFormat) Detect(spec string, _ fs.FileInfo) int {
	if name, ok := strings.CutPrefix(spec, "embedded:"); ok && !strings.Contains(name, "@") {
		return DetectPrefix
	}
	return 0
}

func (*embeddedFormat) Open(spec string, o LoadOptions) (*Dataset, error) {
	name := strings.TrimPrefix(spec, "embedded:")
	if name == "" || strings.ContainsAny(name, `/\.`) || !slices.Contains(EmbeddedNames(), name) {
		return nil, ferr(ErrMissing, "embedded:"+name, 0, 0, "no such embedded dataset (available: %s)", strings.Join(EmbeddedNames(), ", "))
	}
	sub, err := fs.Sub(embeddedData, "datasets/"+name)
	if err != nil {
		return nil, ferr(ErrMissing, "embedded:"+name, 0, 0, "%v", err)
	}
	o.Budget = 0 // shipped with the binary: its size was fixed when strata was built
	return loadOGBFS(sub, "embedded:"+name, "", o)
}

func (*embeddedFormat) Supports() Support {
	return Support{Spec: "embedded:<name> (e.g. embedded:cora)", Rows: true}
}
