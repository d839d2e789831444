package formats

import (
	"fmt"

	"strata/core/safefile"
)

// FeatureSection locates the float32 feature matrix of a strata binary
// graph file: its byte offset in the file, the number of rows and the row
// width. A disk feature tier reads rows there with positional reads
// instead of through the mapping.
func FeatureSection(path string) (offset, rows, dim int64, err error) {
	f, st, err := safefile.Open(path)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("feature section: %w", err)
	}
	defer f.Close()
	h, err := readBinHeader(f, st.Size(), path)
	if err != nil {
		return 0, 0, 0, err
	}
	for _, s := range h.Sections {
		if s.Name == "features" && s.DType == "f4" {
			if h.FeatDim <= 0 || s.Count != h.NumNodes*h.FeatDim || s.Offset < 0 || s.Offset+4*s.Count > st.Size() {
				return 0, 0, 0, fmt.Errorf("%s: feature section %+v does not match %d x %d: %w", path, s, h.NumNodes, h.FeatDim, ErrNoFeatures)
			}
			return s.Offset, h.NumNodes, h.FeatDim, nil
		}
	}
	return 0, 0, 0, fmt.Errorf("%s: %w", path, ErrNoFeatures)
}

// ErrNoFeatures is returned by FeatureSection for a file without a float32
// feature matrix.
var ErrNoFeatures = fmt.Errorf("no float32 feature section")
