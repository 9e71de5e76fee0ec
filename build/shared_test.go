package build

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/perfbisect/perfbisect/internal/testenv"
	"github.com/perfbisect/perfbisect/internal/testhosts"
)

// entryFiles lists an entry's paths with their sizes (symlinks with their
// targets), the marker files left out.
func entryFiles(t *testing.T, prefix string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(prefix, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(prefix, p)
		if rel == "." || rel == completeMarker {
			return nil
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			out = append(out, rel+" -> "+l)
		case d.IsDir():
			out = append(out, rel+"/")
		default:
			info, _ := d.Info()
			out = append(out, rel+" "+strconv.FormatInt(info.Size(), 10))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// A shared build cache in a directory: the first state directory builds the
// revision and stores it; a second builds nothing and gets the same entry,
// whose server runs; an archive cut short is said corrupt, not used, built
// and stored again; a writer's pending temporary file is never read.
func TestSharedCacheInADirectory(t *testing.T) {
	testenv.Require(t, testenv.BuildTools)
	p := newProject(t, 3)
	p.write("CMakeLists.txt", "cmake_minimum_required(VERSION 3.10)\nproject(p C)\n"+
		"add_executable(mariadbd main.c u0.c u1.c u2.c)\ninstall(TARGETS mariadbd DESTINATION bin)\n"+
		"install(FILES data.txt DESTINATION share)\n"+
		"install(CODE \"file(CREATE_LINK mariadbd \\$ENV{DESTDIR}\\${CMAKE_INSTALL_PREFIX}/bin/mysqld SYMBOLIC)\")\n")
	commit := p.commit("a server with a symlink")
	shared := SharedDir(t.TempDir())
	build := func(name string) (string, string) {
		log := &testenv.Buffer{}
		b := &Builder{Repo: p.repo, StateDir: t.TempDir(), Log: log, Shared: shared, Recipe: Recipe{NoCcache: true}}
		prefix, err := b.Build(context.Background(), commit)
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, log)
		}
		t.Logf("%s:\n%s", name, log)
		return prefix, log.String()
	}
	first, log := build("first state directory")
	if !strings.Contains(log, "configure") || !strings.Contains(log, "stored in the shared cache "+string(shared)) {
		t.Fatalf("the first build was not built and stored")
	}
	archives, _ := filepath.Glob(filepath.Join(string(shared), "*", "*.tar.gz"))
	if len(archives) != 1 {
		t.Fatalf("the shared cache holds %v, want one archive", archives)
	}

	second, log := build("second state directory")
	if strings.Contains(log, "configure") || !strings.Contains(log, "fetched from the shared cache") {
		t.Errorf("the second state directory built instead of fetching")
	}
	if a, b := entryFiles(t, first), entryFiles(t, second); strings.Join(a, "\n") != strings.Join(b, "\n") {
		t.Errorf("the fetched entry differs from the built one:\n%s\n---\n%s", strings.Join(a, "\n"), strings.Join(b, "\n"))
	}
	var ee *exec.ExitError
	if err := exec.Command(filepath.Join(second, "bin", "mysqld")).Run(); err != nil && !errors.As(err, &ee) {
		t.Errorf("the fetched server does not run: %v", err)
	}

	// Cut short: corrupt, built, stored whole again.
	data, _ := os.ReadFile(archives[0])
	if err := os.WriteFile(archives[0], data[:len(data)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	_, log = build("after the archive was cut short")
	if !strings.Contains(log, "is corrupt or partial") || !strings.Contains(log, "configure") || !strings.Contains(log, "stored in the shared cache") {
		t.Errorf("a cut archive was not said corrupt, built and stored again")
	}
	_, log = build("after it was stored again")
	if !strings.Contains(log, "fetched from the shared cache") {
		t.Errorf("the archive stored again is not fetched")
	}

	// Only a writer's pending file (it died before the rename): not read.
	os.Rename(archives[0], filepath.Join(filepath.Dir(archives[0]), "."+filepath.Base(archives[0])+"123456"))
	_, log = build("with only a pending file")
	if strings.Contains(log, "fetched") || !strings.Contains(log, "configure") {
		t.Errorf("a pending file was used")
	}
}

// extractEntry refuses an archive that is not a whole entry of its key.
func TestExtractEntryRefusesPartialArchives(t *testing.T) {
	entry := t.TempDir()
	os.MkdirAll(filepath.Join(entry, "bin"), 0o755)
	os.WriteFile(filepath.Join(entry, "bin", "mariadbd"), bytes.Repeat([]byte("server"), 50000), 0o755)
	os.Symlink("mariadbd", filepath.Join(entry, "bin", "mysqld"))
	os.WriteFile(filepath.Join(entry, completeMarker), []byte("x\n"), 0o644)
	var whole bytes.Buffer
	if err := archiveEntry(&whole, entry, "k/c"); err != nil {
		t.Fatal(err)
	}
	if n, size, err := extractEntry(bytes.NewReader(whole.Bytes()), filepath.Join(t.TempDir(), "e"), "k/c"); err != nil || n != 2 || size != 300000+2 {
		t.Fatalf("a whole archive: %d files, %d bytes, %v", n, size, err)
	}
	flipped := bytes.Clone(whole.Bytes())
	flipped[len(flipped)/2] ^= 0xff
	// An archive without its manifest (a writer that stopped before it).
	var noManifest bytes.Buffer
	zw := gzip.NewWriter(&noManifest)
	tw := tar.NewWriter(zw)
	tw.WriteHeader(&tar.Header{Name: completeMarker, Mode: 0o644, Size: 2, Typeflag: tar.TypeReg})
	tw.Write([]byte("x\n"))
	tw.Close()
	zw.Close()
	// A symlink out of the entry, then a file written through it.
	var through bytes.Buffer
	zw = gzip.NewWriter(&through)
	tw = tar.NewWriter(zw)
	outside := t.TempDir()
	tw.WriteHeader(&tar.Header{Name: "lib", Linkname: outside, Typeflag: tar.TypeSymlink, Mode: 0o777})
	tw.WriteHeader(&tar.Header{Name: "lib/planted", Mode: 0o644, Size: 1, Typeflag: tar.TypeReg})
	tw.Write([]byte("x"))
	tw.Close()
	zw.Close()
	// A symlink whose target leaves the entry, and a marker that is a link.
	var linkOut, markerLink bytes.Buffer
	for _, c := range []struct {
		buf  *bytes.Buffer
		hdrs []*tar.Header
	}{
		{&linkOut, []*tar.Header{{Name: "bin/mysqld", Linkname: "../../../bin/sh", Typeflag: tar.TypeSymlink, Mode: 0o777}}},
		{&markerLink, []*tar.Header{{Name: completeMarker, Linkname: "bin", Typeflag: tar.TypeSymlink, Mode: 0o777}}},
	} {
		zw := gzip.NewWriter(c.buf)
		tw := tar.NewWriter(zw)
		for _, h := range c.hdrs {
			tw.WriteHeader(h)
		}
		tw.Close()
		zw.Close()
	}
	var escape bytes.Buffer
	zw = gzip.NewWriter(&escape)
	tw = tar.NewWriter(zw)
	tw.WriteHeader(&tar.Header{Name: "../outside", Mode: 0o644, Size: 1, Typeflag: tar.TypeReg})
	tw.Write([]byte("x"))
	tw.Close()
	zw.Close()
	for name, c := range map[string]struct {
		data []byte
		key  string
	}{
		"cut short":       {whole.Bytes()[:whole.Len()-20], "k/c"},
		"a byte flipped":  {flipped, "k/c"},
		"another's":       {whole.Bytes(), "k/other"},
		"no manifest":     {noManifest.Bytes(), "k/c"},
		"outside the dir": {escape.Bytes(), "k/c"},
		"through a link":  {through.Bytes(), "k/c"},
		"a link out":      {linkOut.Bytes(), "k/c"},
		"a marker link":   {markerLink.Bytes(), "k/c"},
		"not gzip":        {[]byte("<html>404</html>"), "k/c"},
	} {
		_, _, err := extractEntry(bytes.NewReader(c.data), filepath.Join(t.TempDir(), "e"), c.key)
		if !errors.Is(err, errCorrupt) {
			t.Errorf("%s: %v, want a corrupt entry", name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(outside, "planted")); err == nil {
		t.Errorf("an archive wrote outside its entry through a symlink")
	}
}

// The shared build cache on a real HTTP store (nginx, WebDAV PUT): the
// first state directory stores what it built, a second fetches it; an
// entry cut short on the server is said corrupt, built and stored again;
// with the server gone the build says so as the machine's problem and
// builds.
func TestSharedCacheOverHTTP(t *testing.T) {
	testenv.Require(t, testenv.BuildTools, testenv.Nginx)
	store := testhosts.StartObjectStore(t, "127.0.0.13")
	cache, err := ParseSharedCache(store.URL)
	if err != nil {
		t.Fatal(err)
	}
	p := newProject(t, 3)
	commit := p.git("rev-parse", "HEAD")
	build := func(name string) string {
		log := &testenv.Buffer{}
		b := &Builder{Repo: p.repo, StateDir: t.TempDir(), Log: log, Shared: cache, Recipe: Recipe{NoCcache: true}}
		if _, err := b.Build(context.Background(), commit); err != nil {
			t.Fatalf("%s: %v\n%s", name, err, log)
		}
		t.Logf("%s:\n%s", name, log)
		return log.String()
	}
	if log := build("first"); !strings.Contains(log, "configure") || !strings.Contains(log, "stored in the shared cache "+store.URL) {
		t.Fatalf("the first build was not built and stored")
	}
	archives, _ := filepath.Glob(filepath.Join(store.Dir, "*", "*.tar.gz"))
	if len(archives) != 1 {
		t.Fatalf("the store holds %v, want one archive", archives)
	}
	if log := build("second"); strings.Contains(log, "configure") || !strings.Contains(log, "fetched from the shared cache "+store.URL) {
		t.Errorf("the second state directory built instead of fetching")
	}
	data, _ := os.ReadFile(archives[0])
	os.WriteFile(archives[0], data[:len(data)-100], 0o644)
	if log := build("cut short"); !strings.Contains(log, "is corrupt or partial") || !strings.Contains(log, "stored in the shared cache") {
		t.Errorf("an entry cut short on the server was not said corrupt and stored again")
	}
	if log := build("stored again"); !strings.Contains(log, "fetched from the shared cache") {
		t.Errorf("the entry stored again is not fetched")
	}
	store.Stop()
	log := build("server gone")
	if !strings.Contains(log, "could not give") || !strings.Contains(log, "storing it in the shared cache") || !strings.Contains(log, "the machine's problem, not the revision's") || !strings.Contains(log, "configure") {
		t.Errorf("with the server gone the build does not say so as the machine's and build")
	}
}

// A fetched server that needs a library this machine lacks is not used:
// loads says so (the dynamic loader's own words) before any run could fail
// and be blamed on the revision.
func TestLoadsSaysAMissingLibrary(t *testing.T) {
	testenv.Require(t, testenv.BuildTools)
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "bin"), 0o755)
	lib := filepath.Join(dir, "libpbgone.so")
	os.WriteFile(filepath.Join(dir, "gone.c"), []byte("int gone(void){return 3;}\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "main.c"), []byte("int gone(void);\nint main(void){return gone()-3;}\n"), 0o644)
	for _, args := range [][]string{
		{"-shared", "-fPIC", "-o", lib, filepath.Join(dir, "gone.c")},
		{"-o", filepath.Join(dir, "bin", "mariadbd"), filepath.Join(dir, "main.c"), "-L" + dir, "-lpbgone", "-Wl,-rpath," + dir},
	} {
		if out, err := exec.Command("cc", args...).CombinedOutput(); err != nil {
			t.Fatalf("cc %v: %v %s", args, err, out)
		}
	}
	if err := loads(context.Background(), dir); err != nil {
		t.Fatalf("with its library the server loads: %v", err)
	}
	// A code layout's server with the same needs.
	layout := filepath.Join(dir, layoutsDir, "7", "bin")
	os.MkdirAll(layout, 0o755)
	data, _ := os.ReadFile(filepath.Join(dir, "bin", "mariadbd"))
	os.WriteFile(filepath.Join(layout, "mariadbd"), data, 0o755)
	os.Remove(filepath.Join(dir, "bin", "mariadbd"))
	os.Remove(lib)
	err := loads(context.Background(), dir)
	if !errors.Is(err, errUnfit) || !strings.Contains(err.Error(), "libpbgone.so") {
		t.Errorf("a layout's server without its library: %v, want the loader's error naming libpbgone.so", err)
	}
}

// TestReceiveEntryWholeOrNot: an install tree received on a runner host is
// there whole, under its key, or not at all (a cut archive, another key's);
// the least recently used ones go beyond the budget, never the one just
// received.
func TestReceiveEntryWholeOrNot(t *testing.T) {
	src := t.TempDir()
	if err := os.MkdirAll(filepath.Join(src, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "bin", "tool"), bytes.Repeat([]byte("x"), 64<<10), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, completeMarker), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var archive bytes.Buffer
	if err := WriteEntry(&archive, src, "r1/c1-p"); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(t.TempDir(), "installs")
	ctx := context.Background()
	if _, err := ReceiveEntry(ctx, bytes.NewReader(archive.Bytes()[:archive.Len()/2]), root, "r1/c1-p"); !errors.Is(err, ErrCorruptEntry) || HasEntry(root, "r1/c1-p") {
		t.Fatalf("half an archive: %v, entry there %v", err, HasEntry(root, "r1/c1-p"))
	}
	if _, err := ReceiveEntry(ctx, bytes.NewReader(archive.Bytes()), root, "r1/c2-p"); !errors.Is(err, ErrCorruptEntry) || HasEntry(root, "r1/c2-p") {
		t.Fatalf("another key's archive: %v", err)
	}
	dir, err := ReceiveEntry(ctx, bytes.NewReader(archive.Bytes()), root, "r1/c1-p")
	if err != nil || !HasEntry(root, "r1/c1-p") || dir != EntryDir(root, "r1/c1-p") {
		t.Fatalf("whole: %s %v", dir, err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "bin", "tool")); err != nil || len(b) != 64<<10 {
		t.Fatalf("its file: %d bytes, %v", len(b), err)
	}
	for _, key := range []string{".", "/", "r1", "r1/..", "a/b/c", ""} {
		if _, err := ReceiveEntry(ctx, bytes.NewReader(archive.Bytes()), root, key); !errors.Is(err, ErrCorruptEntry) || !HasEntry(root, "r1/c1-p") {
			t.Errorf("key %q: %v (want refused, nothing else touched)", key, err)
		}
	}
	if d := EntryDir(root, "../../etc/x"); !strings.HasPrefix(d, root+string(filepath.Separator)) {
		t.Errorf("a key with .. leads out of the root: %s", d)
	}
	// Another entry, older: over a budget of one entry, it goes.
	var other bytes.Buffer
	if err := WriteEntry(&other, src, "r1/c3-p"); err != nil {
		t.Fatal(err)
	}
	if _, err := ReceiveEntry(ctx, &other, root, "r1/c3-p"); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	_ = os.Chtimes(filepath.Join(EntryDir(root, "r1/c1-p"), completeMarker), old, old)
	gone := EvictEntries(root, 100<<10, EntryDir(root, "r1/c3-p"))
	if len(gone) != 1 || HasEntry(root, "r1/c1-p") || !HasEntry(root, "r1/c3-p") {
		t.Errorf("evicted %v; c1 there %v, c3 there %v; want c1 gone", gone, HasEntry(root, "r1/c1-p"), HasEntry(root, "r1/c3-p"))
	}
}
