package build

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/perfbisect/perfbisect/internal/lru"
	"github.com/perfbisect/perfbisect/internal/syncfs"
)

// Install trees shipped to runner hosts travel in the shared build cache's
// archive format (archiveEntry) under the shared cache's key: a content
// address (the recipe's hash, the commit and the platform), so a host that
// holds a key's entry holds that build.

// ErrCorruptEntry is wrapped by ReceiveEntry's error when the archive is
// not a whole entry of its key (cut short, altered, another key's).
var ErrCorruptEntry = errCorrupt

// ErrUnfitEntry is wrapped by ReceiveEntry's error when the entry is whole
// but its server cannot start on this machine (a library it lacks): the
// machine's problem, never the revision's.
var ErrUnfitEntry = errUnfit

// EntryKey is the key of commit's install tree under b's recipe, as the
// shared build cache names it ("<recipe hash>/<commit>-<platform>").
// Errors: commit does not resolve in b's repository.
func (b *Builder) EntryKey(commit string) (string, error) {
	r, err := b.Resolve(commit)
	if err != nil {
		return "", err
	}
	return sharedKey(r.Hash, commit), nil
}

// WriteEntry writes the complete install tree prefix to w as the archive
// of key (gzip'd tar ending with a manifest of its files and bytes).
func WriteEntry(w io.Writer, prefix, key string) error {
	if !hasFile(filepath.Join(prefix, completeMarker)) {
		return fmt.Errorf("ship %s: %s is not a complete install tree (no %s)", key, prefix, completeMarker)
	}
	return archiveEntry(w, prefix, key)
}

// EntryDir is where key's entry lives under root (a runner host's
// directory of received install trees).
func EntryDir(root, key string) string {
	return filepath.Join(root, filepath.FromSlash(strings.ReplaceAll(key, "..", "_")))
}

// HasEntry reports whether root holds key's entry, complete.
func HasEntry(root, key string) bool {
	return validKey(key) && hasFile(filepath.Join(EntryDir(root, key), completeMarker))
}

// validKey reports whether key has an entry key's shape: two path
// segments, neither empty, "." or "..", no NUL.
func validKey(key string) bool {
	parts := strings.Split(key, "/")
	if len(parts) != 2 || strings.ContainsRune(key, 0) {
		return false
	}
	for _, p := range parts {
		if p == "" || p == "." || p == ".." {
			return false
		}
	}
	return true
}

// ReceiveEntry reads the archive of key from r into root (EntryDir): it is
// extracted beside its place, checked (its manifest, its files, its
// servers start on this machine) and renamed into place, so an entry is
// there whole or not at all; an entry already there is kept and r is not
// read. It returns the entry's directory. Errors wrap ErrCorruptEntry (not
// a whole archive of key) or ErrUnfitEntry (whole, but its server cannot
// start here); a full disk's as it is.
func ReceiveEntry(ctx context.Context, r io.Reader, root, key string) (string, error) {
	if !validKey(key) {
		return "", fmt.Errorf("%w: key %q is not RECIPE/COMMIT-PLATFORM", errCorrupt, key)
	}
	dir := EntryDir(root, key)
	if HasEntry(root, key) {
		return dir, nil
	}
	tmp := fmt.Sprintf("%s.receiving-%d", dir, os.Getpid())
	_ = os.RemoveAll(tmp)
	start := time.Now()
	_, _, err := extractEntry(r, tmp, key)
	if err == nil {
		err = loads(ctx, tmp)
	}
	if err == nil {
		err = syncfs.Dir(tmp)
	}
	if err == nil && HasEntry(root, key) {
		// Another receive of the key finished first: its tree is the same.
		_ = os.RemoveAll(tmp)
		return dir, nil
	}
	if err == nil {
		_ = os.RemoveAll(dir) // an incomplete one: no marker
		if err = os.Rename(tmp, dir); err != nil && HasEntry(root, key) {
			_ = os.RemoveAll(tmp)
			return dir, nil
		}
	}
	if err != nil {
		_ = os.RemoveAll(tmp)
		return "", fmt.Errorf("receive %s: %w", key, err)
	}
	now := time.Now()
	_ = os.Chtimes(filepath.Join(dir, completeMarker), now, now)
	_ = start
	EvictEntries(root, DefaultCacheBudget, dir)
	return dir, nil
}

// UseEntry marks key's entry under root as used now (its marker's time),
// for EvictEntries.
func UseEntry(root, key string) {
	now := time.Now()
	_ = os.Chtimes(filepath.Join(EntryDir(root, key), completeMarker), now, now)
}

// EvictEntries deletes the least recently used entries under root (a
// runner host's received install trees) until the rest fit budget bytes;
// keep stays whatever its size. It returns the entries deleted.
func EvictEntries(root string, budget int64, keep string) []string {
	var gone []string
	lru.Evict(entriesUnder(root), budget, func(e lru.Entry) bool { return e.Dir == keep }, func(v lru.Entry) bool {
		if os.Remove(filepath.Join(v.Dir, completeMarker)) != nil || os.RemoveAll(v.Dir) != nil {
			return false
		}
		_ = os.Remove(filepath.Dir(v.Dir))
		gone = append(gone, v.Dir)
		return true
	})
	return gone
}

// IsEntryFault reports whether err is an entry's (corrupt or unfit), as
// opposed to the machine's disk or the transport's.
func IsEntryFault(err error) bool {
	return errors.Is(err, errCorrupt) || errors.Is(err, errUnfit)
}
