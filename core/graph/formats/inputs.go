package formats

import "strings"

// InputFiles lists the files a dataset spec reads: the spec, its path
// without an @split, and its member files (Sources). A writer of the same
// run passes them to safefile as inputs, so that no output replaces one.
// Names that are not files (embedded:..., rmat-...) are harmless there.
func InputFiles(spec string) []string {
	path, _, _ := strings.Cut(spec, "@")
	files := []string{spec, path}
	if src, _, err := Sources(spec); err == nil {
		for _, f := range src {
			files = append(files, f.Name)
		}
	}
	return files
}
