package build

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/perfbisect/perfbisect/internal/lru"
)

// notForRunning are the parts of an installed server tree that running and
// initialising a server does not need (paths relative to the prefix; a
// trailing "/" is a directory): the test suite and benchmarks, headers,
// static libraries, the embedded server,
// documentation and test-only client programs. Cache entries drop them.
var notForRunning = []string{
	"mysql-test/", "share/mysql-test/", "mariadb-test/", "share/mariadb-test/", "sql-bench/", "share/sql-bench/",
	"include/", "man/", "share/man/", "docs/", "share/doc/", "lib/pkgconfig/", "share/pkgconfig/",
	"bin/mysqltest", "bin/mariadb-test", "bin/mysqltest_embedded", "bin/mariadb-test-embedded",
	"bin/mysql_client_test", "bin/mariadb-client-test", "bin/mysql_client_test_embedded", "bin/mariadb-client-test-embedded",
	"bin/mysql_embedded", "bin/mariadb-embedded", "bin/test-connect-t", "bin/mysqlxtest",
}

// runtimeBin are the programs of bin/ and sbin/ that running and initialising
// a server needs: the server, the datadir initialiser (MariaDB and MySQL 5.6
// and older) and the helpers the initialiser calls. With a preset (a known
// server tree) every other program there (clients, aria_*/myisam* tools)
// is not kept.
var runtimeBin = map[string]bool{
	"mariadbd": true, "mysqld": true, "mariadb-install-db": true, "mysql_install_db": true,
	"my_print_defaults": true, "mariadb-print-defaults": true, "resolveip": true, "mariadb-resolveip": true,
}

// CacheStats describes one cache entry: its files, the bytes they take, and
// how many of those bytes are new (the rest are hard links to identical files
// of another entry).
type CacheStats struct {
	Files       int
	Bytes       int64 // apparent size of every file kept
	NewBytes    int64 // bytes not shared with another entry
	PrunedBytes int64 // bytes dropped as not needed for running (notForRunning, static libraries)
}

func (s CacheStats) String() string {
	out := fmt.Sprintf("%d files, %s cached", s.Files, sizeString(s.Bytes))
	if s.NewBytes < s.Bytes {
		out += fmt.Sprintf(" (%s new; the rest hard-linked to identical files of the previous build)", sizeString(s.NewBytes))
	}
	if s.PrunedBytes > 0 {
		out += fmt.Sprintf("; %s of tests, headers, static libraries and client programs not kept", sizeString(s.PrunedBytes))
	}
	return out
}

// store makes a freshly installed prefix a cache entry: it drops what running
// the server does not need (with lean, also every program of bin/ and sbin/
// but runtimeBin), symlinks left pointing at nothing, and hard-links each file identical to the same path
// in the most recently used other entry of the same recipe.
func (b *Builder) store(prefix string, lean bool) (CacheStats, error) {
	var st CacheStats
	if lean {
		for _, dir := range []string{"bin", "sbin"} {
			ents, _ := os.ReadDir(filepath.Join(prefix, dir))
			for _, e := range ents {
				if runtimeBin[e.Name()] {
					continue
				}
				p := filepath.Join(prefix, dir, e.Name())
				if e.Type().IsRegular() {
					st.PrunedBytes += treeBytes(p)
				}
				if err := os.RemoveAll(p); err != nil {
					return st, err
				}
			}
		}
	}
	for _, rel := range notForRunning {
		p := filepath.Join(prefix, filepath.FromSlash(strings.TrimSuffix(rel, "/")))
		if fi, err := os.Lstat(p); err == nil {
			st.PrunedBytes += treeBytes(p)
			if fi.IsDir() {
				if err := os.RemoveAll(p); err != nil {
					return st, err
				}
			} else if err := os.Remove(p); err != nil {
				return st, err
			}
		}
	}
	prev := b.previousEntry(prefix)
	err := filepath.WalkDir(prefix, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			if _, err := os.Stat(p); err != nil {
				return os.Remove(p) // it pointed to something not kept
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(prefix, p)
		if strings.HasSuffix(p, ".a") && strings.HasPrefix(rel, "lib"+string(filepath.Separator)) {
			st.PrunedBytes += info.Size()
			return os.Remove(p)
		}
		st.Files++
		st.Bytes += info.Size()
		if prev != "" {
			old := filepath.Join(prev, rel)
			if oi, err := os.Lstat(old); err == nil && oi.Mode().IsRegular() && oi.Size() == info.Size() && oi.Mode().Perm() == info.Mode().Perm() && sameContent(old, p) {
				tmp := p + ".perfbisect-link"
				if err := os.Link(old, tmp); err == nil {
					if err := os.Rename(tmp, p); err != nil {
						_ = os.Remove(tmp)
						return err
					}
					return nil
				}
			}
		}
		st.NewBytes += info.Size()
		return nil
	})
	return st, err
}

// hasFile reports whether the tree at p holds any file (an empty file
// counts; directories do not).
func hasFile(p string) bool {
	found := false
	_ = filepath.WalkDir(p, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			found = true
			return fs.SkipAll
		}
		return nil
	})
	return found
}

// tidy removes, once per Builder, what interrupted builds of earlier
// sessions left in the cache: DESTDIR trees (<sha>.tmp) and entries without
// their completion marker. Call it holding the state directory's lock.
func (b *Builder) tidy() {
	if b.tidied {
		return
	}
	b.tidied = true
	dirs, _ := filepath.Glob(filepath.Join(b.StateDir, "installs", "*", "*"))
	for _, d := range dirs {
		if strings.HasSuffix(d, ".failed.json") {
			continue
		}
		if _, err := os.Stat(filepath.Join(d, completeMarker)); err == nil && !strings.HasSuffix(d, ".shared") {
			continue
		}
		if err := os.RemoveAll(d); err == nil {
			b.logf("removed %s: an install interrupted in an earlier session", d)
		}
	}
}

// previousEntry is the complete cache entry of the same recipe used last
// (other than prefix), or "".
func (b *Builder) previousEntry(prefix string) string {
	entries, _ := filepath.Glob(filepath.Join(filepath.Dir(prefix), "*", completeMarker))
	best, bestTime := "", time.Time{}
	for _, m := range entries {
		dir := filepath.Dir(m)
		if dir == prefix {
			continue
		}
		if fi, err := os.Stat(m); err == nil && fi.ModTime().After(bestTime) {
			best, bestTime = dir, fi.ModTime()
		}
	}
	return best
}

// sameContent reports whether two files hold the same bytes.
func sameContent(a, b string) bool {
	fa, err := os.Open(a)
	if err != nil {
		return false
	}
	defer fa.Close()
	fb, err := os.Open(b)
	if err != nil {
		return false
	}
	defer fb.Close()
	ba, bb := make([]byte, 256<<10), make([]byte, 256<<10)
	for {
		na, ea := io.ReadFull(fa, ba)
		nb, eb := io.ReadFull(fb, bb)
		if na != nb || !bytes.Equal(ba[:na], bb[:nb]) {
			return false
		}
		if ea != nil || eb != nil {
			return ea == eb || (ea == io.ErrUnexpectedEOF || ea == io.EOF) && (eb == io.ErrUnexpectedEOF || eb == io.EOF)
		}
	}
}

// treeBytes is the apparent size of the regular files under p (or of p).
func treeBytes(p string) int64 {
	var n int64
	_ = filepath.WalkDir(p, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// CacheEntries lists the complete cache entries under stateDir (every
// recipe), each with its last use and the disk bytes it holds alone (a file
// hard-linked into several entries is charged to the most recently used one).
func CacheEntries(stateDir string) []lru.Entry {
	return entriesUnder(filepath.Join(stateDir, "installs"))
}

// entriesUnder is CacheEntries of a directory of entries (RECIPE/COMMIT).
func entriesUnder(dir string) []lru.Entry {
	markers, _ := filepath.Glob(filepath.Join(dir, "*", "*", completeMarker))
	var entries []lru.Entry
	for _, m := range markers {
		if fi, err := os.Stat(m); err == nil {
			entries = append(entries, lru.Entry{Dir: filepath.Dir(m), Used: fi.ModTime()})
		}
	}
	// Newest first, so that shared files are charged to the entry that will
	// be evicted last.
	for i := 1; i < len(entries); i++ {
		for j := i; j > 0 && entries[j].Used.After(entries[j-1].Used); j-- {
			entries[j], entries[j-1] = entries[j-1], entries[j]
		}
	}
	var sizer lru.Sizer
	for i := range entries {
		entries[i].Bytes = sizer.Bytes(entries[i].Dir)
	}
	return entries
}

// evict deletes least recently used cache entries until the cache fits
// CacheBudget; the entries this Builder returned stay.
func (b *Builder) evict() {
	budget := b.CacheBudget
	if budget == 0 {
		budget = DefaultCacheBudget
	}
	entries := CacheEntries(b.StateDir)
	var total int64
	for _, e := range entries {
		total += e.Bytes
	}
	total = lru.Evict(entries, budget, func(e lru.Entry) bool { return b.used[e.Dir] }, func(v lru.Entry) bool {
		// The marker goes first: a half-deleted entry is never taken for a hit.
		if err := os.Remove(filepath.Join(v.Dir, completeMarker)); err != nil {
			b.logf("note: evict build %s: %v", v.Dir, err)
			return false
		}
		if err := os.RemoveAll(v.Dir); err != nil {
			b.logf("note: evict build %s: %v", v.Dir, err)
			return false
		}
		_ = os.Remove(filepath.Dir(v.Dir)) // the recipe's directory, when it was the last entry
		b.logf("evicted build %.10s of recipe %s (%s, last used %s): installed builds over the %s budget (--build-cache-size)",
			filepath.Base(v.Dir), filepath.Base(filepath.Dir(v.Dir)), sizeString(v.Bytes), v.Used.Format(time.DateTime), sizeString(budget))
		return true
	})
	if total > budget {
		b.logf("note: the builds this session uses take %s, over the %s budget (--build-cache-size)", sizeString(total), sizeString(budget))
	}
}
