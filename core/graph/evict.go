package graph

// DropMappedPages returns the resident pages of a dataset opened from a
// binary file (OpenBinary maps it read-only) to the page cache: they stop
// counting in the process's resident memory and are read again, from the
// cache or the file, when something touches them. Call it once the data
// has been copied where training reads it; the dataset stays valid. It does
// nothing for a dataset that is not mapped.
func (d *Dataset) DropMappedPages() {
	if len(d.mapped) > 0 {
		dropPages(d.mapped)
	}
}

// SetMapping records the file mapping d's slices point into (a format
// that maps its file sets it), for DropMappedPages.
func (d *Dataset) SetMapping(data []byte) { d.mapped = data }
