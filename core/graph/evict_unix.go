//go:build unix

package graph

import "syscall"

// dropPages drops the resident pages of a read-only shared file mapping
// (MADV_DONTNEED: the next access reads the file's pages again).
func dropPages(b []byte) { _ = syscall.Madvise(b, syscall.MADV_DONTNEED) }
