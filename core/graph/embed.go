package graph

import (
	"embed"
	"io/fs"
	"slices"
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
	name = strings.TrimPrefix(name, "embedded:")
	if name == "" || strings.ContainsAny(name, `/\.`) || !slices.Contains(EmbeddedNames(), name) {
		return nil, ferr(ErrMissing, "embedded:"+name, 0, 0, "no such embedded dataset (available: %s)", strings.Join(EmbeddedNames(), ", "))
	}
	sub, err := fs.Sub(embeddedData, "datasets/"+name)
	if err != nil {
		return nil, ferr(ErrMissing, "embedded:"+name, 0, 0, "%v", err)
	}
	return LoadOGBFS(sub, "embedded:"+name, "")
}
