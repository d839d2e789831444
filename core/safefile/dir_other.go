//go:build !linux

package safefile

// renameNoReplace renames old to new unless new exists (checked before
// the rename: this platform has no atomic form here).
func renameNoReplace(old, new string) error { return renameChecked(old, new) }
