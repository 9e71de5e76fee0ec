package build

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/renameio/v2"

	"github.com/perfbisect/perfbisect/internal/syncfs"
)

// SharedCache is a build cache that several state directories, machines or
// a CI fleet share: each install entry is one archive under a key (the
// recipe's hash, the commit and the platform: sharedKey), so a
// revision a team has built once is fetched, not built. A Put is seen
// whole or not at all; a Get of an entry that is absent returns
// ErrNotShared.
type SharedCache interface {
	// Get writes the archive stored under key to w.
	Get(ctx context.Context, key string, w io.Writer) error
	// Put stores the archive r yields under key, replacing any.
	Put(ctx context.Context, key string, r io.Reader) error
	// String names the cache for the user ("/mnt/builds").
	String() string
}

// ErrNotShared is returned (wrapped) by SharedCache.Get for an absent key.
var ErrNotShared = errors.New("not in the shared cache")

// SharedDir is a SharedCache in a directory any machine can mount (NFS, a
// CI runner's volume): DIR/<recipe>/<commit>-<platform>.tar.gz, written
// under a temporary name and renamed into place.
type SharedDir string

func (d SharedDir) path(key string) string { return filepath.Join(string(d), key+".tar.gz") }

// Get implements SharedCache.
func (d SharedDir) Get(ctx context.Context, key string, w io.Writer) error {
	f, err := os.Open(d.path(key))
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s: %w", key, ErrNotShared)
	}
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(w, f)
	return err
}

// Put implements SharedCache.
func (d SharedDir) Put(ctx context.Context, key string, r io.Reader) error {
	p := d.path(key)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	// A writer killed mid-way leaves its pending file (".NAME<random>",
	// renameio's); one a day old is nobody's.
	old, _ := filepath.Glob(filepath.Join(filepath.Dir(p), ".*.tar.gz*"))
	for _, f := range old {
		if st, err := os.Stat(f); err == nil && time.Since(st.ModTime()) > 24*time.Hour {
			_ = os.Remove(f)
		}
	}
	t, err := renameio.NewPendingFile(p, renameio.WithPermissions(0o644))
	if err != nil {
		return err
	}
	defer t.Cleanup()
	if _, err := io.Copy(t, r); err != nil {
		return err
	}
	return t.CloseAtomicallyReplace()
}

func (d SharedDir) String() string { return string(d) }

// sharedManifest is the last member of an entry's archive: an archive
// without it, or whose files differ from it, is partial and never used.
type sharedManifest struct {
	Key      string `json:"key"`
	Files    int    `json:"files"` // regular files before it
	Bytes    int64  `json:"bytes"` // their sizes summed
	Platform string `json:"platform"`
	Built    string `json:"built"` // RFC 3339
}

const sharedManifestName = ".perfbisect-shared.json"

// platform names what a built server needs of the machine it runs on
// beyond the recipe: the OS and architecture, the distribution and its
// release (the C library), and the compiler's version. Entries are shared
// between machines with the same platform only.
var platform = sync.OnceValue(func() string {
	parts := []string{runtime.GOOS, runtime.GOARCH}
	if data, err := os.ReadFile("/etc/os-release"); err == nil {
		vals := map[string]string{}
		for _, l := range strings.Split(string(data), "\n") {
			if k, v, ok := strings.Cut(l, "="); ok {
				vals[k] = strings.Trim(v, `"`)
			}
		}
		parts = append(parts, vals["ID"]+"-"+vals["VERSION_ID"])
	}
	if out, err := exec.Command("cc", "-dumpfullversion").Output(); err == nil {
		parts = append(parts, "cc-"+strings.TrimSpace(string(out)))
	}
	return strings.Join(parts, " ")
})

// sharedKey is the key of commit's entry with recipe hash in a shared cache:
// the local cache's (recipe, commit) and the platform.
func sharedKey(hash, commit string) string {
	return hash + "/" + commit + "-" + shortHash(platform())
}

// fromShared fetches commit's entry from the shared cache into prefix (the
// local cache's entry, absent): extracted beside it, checked against its
// manifest and its code layouts (its link inputs by linking a layout from
// them), then renamed into place. It returns
// whether the entry is there now; a shared entry that is corrupt or
// partial is said and not used (the caller builds), and so is one the
// shared cache could not give (the machine's problem, said).
func (b *Builder) fromShared(ctx context.Context, r Resolved, commit, prefix string) bool {
	key := sharedKey(r.Hash, commit)
	start := time.Now()
	tmp := prefix + ".shared"
	_ = os.RemoveAll(tmp)
	pr, pw := io.Pipe()
	got := make(chan error, 1)
	go func() {
		err := b.Shared.Get(ctx, key, pw)
		pw.CloseWithError(err)
		got <- err
	}()
	files, bytes, err := extractEntry(pr, tmp, key)
	pr.CloseWithError(io.ErrClosedPipe) // the writer stops if extraction did
	if gerr := <-got; gerr != nil && !errors.Is(gerr, io.ErrClosedPipe) {
		err = gerr
	}
	if err == nil && !hasLayouts(tmp, b.Layouts) {
		err = fmt.Errorf("%w: it lacks the %s asked for", errUnfit, layoutsText(b.Layouts))
	}
	if err == nil && b.Layouts == LayoutPerRun {
		if cerr := checkKit(ctx, tmp, io.Discard); cerr != nil {
			err = fmt.Errorf("%w: its server does not link here from the inputs it keeps (%v)", errUnfit, cerr)
		}
	}
	if err == nil {
		err = loads(ctx, tmp)
	}
	if err == nil {
		err = syncfs.Dir(tmp)
	}
	if err == nil {
		_ = os.MkdirAll(filepath.Dir(prefix), 0o755)
		err = os.Rename(tmp, prefix)
	}
	if err != nil {
		_ = os.RemoveAll(tmp)
		switch {
		case errors.Is(err, ErrNotShared):
		case errors.Is(err, errUnfit):
			b.logf("build %.10s: entry %s of the shared cache %s does not fit here (%v): building", commit, key, b.Shared, err)
		case errors.Is(err, errCorrupt):
			b.warnf("build %.10s: entry %s of the shared cache %s is corrupt or partial (%v): not used; building", commit, key, b.Shared, err)
		default:
			b.warnf("build %.10s: the shared cache %s could not give %s (%v): building (the machine's problem, not the revision's)", commit, b.Shared, key, err)
		}
		return false
	}
	now := time.Now()
	_ = os.Chtimes(filepath.Join(prefix, completeMarker), now, now)
	b.markUsed(prefix)
	b.logf("build %.10s: fetched from the shared cache %s in %.1fs: %d files, %s", commit, b.Shared, time.Since(start).Seconds(), files, sizeString(bytes))
	b.evict()
	return true
}

// toShared stores the complete entry prefix of commit in the shared cache;
// a failure is said (the machine's problem) and costs nothing else.
func (b *Builder) toShared(ctx context.Context, r Resolved, commit, prefix string) {
	key := sharedKey(r.Hash, commit)
	start := time.Now()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := archiveEntry(pw, prefix, key)
		pw.CloseWithError(err)
		done <- err
	}()
	err := b.Shared.Put(ctx, key, pr)
	pr.CloseWithError(io.ErrClosedPipe)
	if aerr := <-done; aerr != nil && !errors.Is(aerr, io.ErrClosedPipe) {
		err = aerr
	}
	if err != nil {
		b.warnf("build %.10s: storing it in the shared cache %s failed (%v): other machines will build it too (the machine's problem, not the revision's)", commit, b.Shared, err)
		return
	}
	b.logf("build %.10s: stored in the shared cache %s in %.1fs", commit, b.Shared, time.Since(start).Seconds())
}

// errCorrupt marks an archive that is not a whole entry.
var errCorrupt = errors.New("corrupt entry")

// errUnfit marks a whole entry this build cannot use: fewer code layouts
// than asked, or a server that needs libraries this machine lacks.
var errUnfit = errors.New("not for this build")

// loads runs each server program of the entry prefix with --version and
// returns errUnfit when the dynamic loader cannot start it (a library the
// machine that built it had and this one lacks: libaio, liburing, numa),
// which would otherwise fail every run and be blamed on the revision.
func loads(ctx context.Context, prefix string) error {
	rels := []string{"bin/mariadbd", "sbin/mariadbd", "bin/mysqld", "sbin/mysqld", "libexec/mysqld", "libexec/mariadbd"}
	// The code layouts' servers too: their run path was made absolute
	// where they were linked.
	_ = filepath.WalkDir(filepath.Join(prefix, layoutsDir), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			rel, _ := filepath.Rel(prefix, p)
			rels = append(rels, rel)
		}
		return nil
	})
	for _, rel := range rels {
		p := filepath.Join(prefix, rel)
		if st, err := os.Lstat(p); err != nil || !st.Mode().IsRegular() {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		out, _ := exec.CommandContext(cctx, p, "--version").CombinedOutput()
		cancel()
		if i := strings.Index(string(out), "error while loading shared libraries"); i >= 0 {
			line, _, _ := strings.Cut(string(out[i:]), "\n")
			return fmt.Errorf("%w: %s: %s", errUnfit, rel, line)
		}
	}
	return nil
}

// archiveEntry writes the entry prefix to w as a gzip'd tar (regular files,
// directories and symlinks; hard links as files) ending with its manifest.
func archiveEntry(w io.Writer, prefix, key string) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	zw, err := gzip.NewWriterLevel(bw, gzip.BestSpeed)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(zw)
	m := sharedManifest{Key: key, Platform: platform(), Built: time.Now().UTC().Format(time.RFC3339)}
	err = filepath.WalkDir(prefix, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(prefix, p)
		if rel == "." {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		link := ""
		if d.Type()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		}
		if !d.IsDir() && !d.Type().IsRegular() && link == "" {
			return nil // sockets, pipes: nothing a server runs
		}
		h, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return err
		}
		h.Name = filepath.ToSlash(rel)
		h.Uname, h.Gname = "", ""
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		n, err := io.Copy(tw, f)
		m.Files++
		m.Bytes += n
		return err
	})
	if err != nil {
		return err
	}
	data, _ := json.Marshal(m)
	if err := tw.WriteHeader(&tar.Header{Name: sharedManifestName, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg, ModTime: time.Now()}); err != nil {
		return err
	}
	if _, err := tw.Write(data); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return bw.Flush()
}

// extractEntry extracts an archive of archiveEntry into dir (made) and
// checks it: the gzip checksum, a manifest last, for key, whose file count
// and bytes match what was extracted, and no path outside dir. Errors that
// say the archive is not a whole entry wrap errCorrupt.
func extractEntry(r io.Reader, dir, key string) (files int, bytes int64, err error) {
	corrupt := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", errCorrupt, fmt.Sprintf(format, args...))
	}
	zr, err := gzip.NewReader(bufio.NewReaderSize(r, 1<<20))
	if err != nil {
		if errors.Is(err, ErrNotShared) {
			return 0, 0, err
		}
		return 0, 0, corrupt("%v", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, 0, err
	}
	// Every file is made through root: a name or a symlink of the archive
	// that leads outside dir is refused, never followed.
	root, err := os.OpenRoot(dir)
	if err != nil {
		return 0, 0, err
	}
	defer root.Close()
	tr := tar.NewReader(zr)
	var m *sharedManifest
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return files, bytes, corrupt("%v", err)
		}
		if m != nil {
			return files, bytes, corrupt("%s after the manifest", h.Name)
		}
		if h.Name == sharedManifestName {
			data, err := io.ReadAll(tr)
			m = &sharedManifest{}
			if err != nil || json.Unmarshal(data, m) != nil {
				return files, bytes, corrupt("unreadable manifest")
			}
			continue
		}
		name := filepath.FromSlash(h.Name)
		if !filepath.IsLocal(name) {
			return files, bytes, corrupt("path %q outside the entry", h.Name)
		}
		parent := filepath.Dir(name)
		switch h.Typeflag {
		case tar.TypeDir:
			err = root.MkdirAll(name, fs.FileMode(h.Mode).Perm()|0o700)
		case tar.TypeSymlink:
			// Relative, within the entry: what CMake installs.
			if filepath.IsAbs(h.Linkname) || !filepath.IsLocal(filepath.Join(parent, filepath.FromSlash(h.Linkname))) {
				return files, bytes, corrupt("symlink %s -> %s leads outside the entry", h.Name, h.Linkname)
			}
			if err = root.MkdirAll(parent, 0o755); err == nil {
				err = root.Symlink(h.Linkname, name)
			}
		case tar.TypeReg:
			var f *os.File
			if err = root.MkdirAll(parent, 0o755); err == nil {
				f, err = root.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, fs.FileMode(h.Mode).Perm())
			}
			if err == nil {
				var n int64
				n, err = io.Copy(f, tr)
				if cerr := f.Close(); err == nil {
					err = cerr
				}
				files++
				bytes += n
			}
		default:
			return files, bytes, corrupt("%s: unexpected type %c", h.Name, h.Typeflag)
		}
		if err != nil {
			if !machineIOError(err) {
				// A read cut short, a name outside the entry or made
				// twice: not an archive archiveEntry wrote.
				err = corrupt("%s: %v", h.Name, err)
			}
			return files, bytes, err
		}
		if h.Typeflag != tar.TypeSymlink {
			_ = root.Chtimes(name, h.ModTime, h.ModTime)
		}
	}
	// Reading to the end checks the gzip trailer's CRC and length.
	if _, err := io.Copy(io.Discard, zr); err != nil {
		return files, bytes, corrupt("%v", err)
	}
	switch {
	case m == nil:
		return files, bytes, corrupt("no manifest: the archive is partial")
	case m.Key != key:
		return files, bytes, corrupt("the manifest is %s's", m.Key)
	case m.Files != files || m.Bytes != bytes:
		return files, bytes, corrupt("%d files, %d bytes; the manifest says %d, %d", files, bytes, m.Files, m.Bytes)
	}
	if st, err := os.Lstat(filepath.Join(dir, completeMarker)); err != nil || !st.Mode().IsRegular() {
		return files, bytes, corrupt("no %s file", completeMarker)
	}
	return files, bytes, nil
}

// machineIOError reports whether err is this machine's (a full disk, a
// quota, no permission, an I/O error), not an archive's.
func machineIOError(err error) bool {
	for _, e := range []error{syscall.ENOSPC, syscall.EDQUOT, syscall.EIO, syscall.EROFS, fs.ErrPermission} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// SharedHTTP is a SharedCache on an HTTP server that stores what is PUT and
// serves it back on GET (nginx's WebDAV module, an object store's plain
// HTTP endpoint, a build cache server): Base/<recipe>/<commit>-<platform>.tar.gz.
// A 404 is an absent entry.
type SharedHTTP struct {
	Base   *url.URL
	Client *http.Client // nil: http.DefaultClient
}

func (h SharedHTTP) url(key string) string {
	u := *h.Base
	u.Path = strings.TrimSuffix(u.Path, "/") + "/" + key + ".tar.gz"
	return u.String()
}

func (h SharedHTTP) client() *http.Client {
	if h.Client != nil {
		return h.Client
	}
	return http.DefaultClient
}

// Get implements SharedCache.
func (h SharedHTTP) Get(ctx context.Context, key string, w io.Writer) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.url(key), nil)
	if err != nil {
		return err
	}
	resp, err := h.client().Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return fmt.Errorf("%s: %w", key, ErrNotShared)
	case resp.StatusCode != http.StatusOK:
		return fmt.Errorf("GET %s: %s", h.url(key), resp.Status)
	}
	n, err := io.Copy(w, resp.Body)
	if err == nil && resp.ContentLength >= 0 && n != resp.ContentLength {
		err = fmt.Errorf("GET %s: %d of %d bytes", h.url(key), n, resp.ContentLength)
	}
	return err
}

// Put implements SharedCache. The server must store the body whole or not
// at all (nginx's WebDAV writes it to a temporary file first).
func (h SharedHTTP) Put(ctx context.Context, key string, r io.Reader) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, h.url(key), r)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/gzip")
	resp, err := h.client().Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("PUT %s: %s", h.url(key), resp.Status)
	}
	return nil
}

func (h SharedHTTP) String() string { return h.Base.Redacted() }

// ParseSharedCache is the shared cache at where: an http:// or https:// URL
// (SharedHTTP) or a directory (SharedDir, made absolute; it must exist).
func ParseSharedCache(where string) (SharedCache, error) {
	if strings.HasPrefix(where, "http://") || strings.HasPrefix(where, "https://") {
		u, err := url.Parse(where)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("%q is not a URL (http://host/path)", where)
		}
		return SharedHTTP{Base: u}, nil
	}
	abs, err := filepath.Abs(where)
	if err != nil {
		return nil, err
	}
	if st, err := os.Stat(abs); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("%s: not a directory (make it, or mount the team's build cache there)", abs)
	}
	return SharedDir(abs), nil
}
