// Package lru bounds the disk space of a cache of directories (installed
// builds, prepared datadirs): it measures them, counting hard-linked files
// once, and picks the least recently used ones to delete until the rest fit a
// budget.
package lru

import (
	"io/fs"
	"path/filepath"
	"sort"
	"syscall"
	"time"
)

// Entry is one cached directory.
type Entry struct {
	Dir   string
	Used  time.Time // last use (the caller's marker file's mtime)
	Bytes int64     // disk bytes it holds alone (see Sizer)
}

// Sizer adds up the disk space of directories, counting each inode once over
// all its calls: a file hard-linked into two entries is charged to the first
// one measured. The zero value is ready to use.
type Sizer struct {
	seen map[[2]uint64]bool
}

// Bytes returns the allocated bytes (st_blocks x 512) of the regular files
// under dir that no earlier call counted. Unreadable parts count as 0.
func (s *Sizer) Bytes(dir string) int64 {
	if s.seen == nil {
		s.seen = map[[2]uint64]bool{}
	}
	var n int64
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		st, ok := info.Sys().(*syscall.Stat_t)
		if !ok {
			n += info.Size()
			return nil
		}
		key := [2]uint64{st.Dev, st.Ino}
		if st.Nlink > 1 {
			if s.seen[key] {
				return nil
			}
			s.seen[key] = true
		}
		n += st.Blocks * 512
		return nil
	})
	return n
}

// Evict calls remove on entries, least recently used first, until the others
// fit in budget bytes, and returns the bytes left. Entries for which keep
// returns true (in use by this process) are never removed, and neither is an
// entry whose remove returns false (it could not be deleted; the next one
// goes instead), so the rest may still exceed the budget.
func Evict(entries []Entry, budget int64, keep func(Entry) bool, remove func(Entry) bool) int64 {
	sorted := append([]Entry(nil), entries...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Used.Before(sorted[j].Used) })
	var total int64
	for _, e := range sorted {
		total += e.Bytes
	}
	for _, e := range sorted {
		if total <= budget {
			break
		}
		if keep != nil && keep(e) {
			continue
		}
		if remove(e) {
			total -= e.Bytes
		}
	}
	return total
}
