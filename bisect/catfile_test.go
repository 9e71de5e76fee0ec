package bisect

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/perfbisect/perfbisect/internal/gitcat"
)

// filesRepo makes a packed repository of two commits with files of every
// kind go-git reads: small ones, an executable, a symlink, a nested
// directory and a blob larger than largeObject; it returns the porcelain
// and the two commits.
func filesRepo(t *testing.T) (*porcelain, string, string) {
	t.Helper()
	p := newPorcelain(t, 60)
	write := func(name, text string, mode os.FileMode) {
		path := filepath.Join(p.dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), mode); err != nil {
			t.Fatal(err)
		}
	}
	write("VERSION", "MYSQL_VERSION_MAJOR=10\n", 0o644)
	write("sql/sql_yacc.yy", strings.Repeat("rule: token ;\n", 100), 0o644)
	write("scripts/run.sh", "#!/bin/sh\necho run\n", 0o755)
	big := make([]byte, largeObject+12345)
	for i := range big {
		big[i] = byte(i*7 + i/1000)
	}
	write("mysql-test/std_data/big.dat", string(big), 0o644)
	if err := os.Symlink("sql/sql_yacc.yy", filepath.Join(p.dir, "link")); err != nil {
		t.Fatal(err)
	}
	p.git("add", "-A")
	first := p.commit("first")
	write("VERSION", "MYSQL_VERSION_MAJOR=11\n", 0o644)
	p.git("add", "-A")
	second := p.commit("second")
	p.git("gc", "-q")
	return p, first, second
}

// readAll is every file of the commit's tree: path -> mode and contents.
func readAll(t *testing.T, r *git.Repository, commit string) map[string]string {
	t.Helper()
	c, err := r.CommitObject(plumbing.NewHash(commit))
	if err != nil {
		t.Fatal(err)
	}
	tree, err := c.Tree()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	err = tree.Files().ForEach(func(f *object.File) error {
		rd, err := f.Reader()
		if err != nil {
			return err
		}
		defer rd.Close()
		b, err := io.ReadAll(rd)
		if err != nil {
			return err
		}
		out[f.Name] = f.Mode.String() + " " + string(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A repository with more packed objects than CatFileObjects is read through
// git cat-file, and reads as go-git reads it: commits, trees, every file's
// mode and contents (a large one streamed), refs and ranges; a missing
// object or one of another type is plumbing.ErrObjectNotFound; idle
// cat-file processes end and start again on the next read.
func TestCatFileReadsAsGoGit(t *testing.T) {
	p, first, second := filesRepo(t)
	if n := gitcat.PackedObjects(filepath.Join(p.dir, ".git")); n < 8 {
		t.Fatalf("packed objects %d, want the repository's (8 or more)", n)
	}
	plain, err := OpenRepo(p.dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := plain.Storer.(*gitcat.Storage); ok {
		t.Fatal("a small repository is read through cat-file")
	}
	defer func(n int64, idle time.Duration) { CatFileObjects, gitcat.IdleTimeout = n, idle }(CatFileObjects, gitcat.IdleTimeout)
	CatFileObjects, gitcat.IdleTimeout = 1, 200*time.Millisecond
	r, err := OpenRepo(p.dir)
	if err != nil {
		t.Fatal(err)
	}
	cs, ok := r.Storer.(*gitcat.Storage)
	if !ok {
		t.Fatalf("storage %T, want cat-file's", r.Storer)
	}
	if GitDir(r) != GitDir(plain) || GitDir(r) == "" {
		t.Errorf("git dir %q, want %q", GitDir(r), GitDir(plain))
	}
	for _, c := range []string{first, second} {
		want, got := readAll(t, plain, c), readAll(t, r, c)
		if len(got) != 5 || len(want) != len(got) {
			t.Fatalf("%s: %d files, go-git %d", c, len(got), len(want))
		}
		for name, w := range want {
			if got[name] != w {
				t.Errorf("%s %s: %d bytes differ from go-git's %d", c, name, len(got[name]), len(w))
			}
		}
	}
	c, err := r.CommitObject(plumbing.NewHash(second))
	if err != nil || c.Message != "second\n" || len(c.ParentHashes) != 1 || c.ParentHashes[0].String() != first {
		t.Errorf("commit %v %v", c, err)
	}
	if h, err := Resolve(r, "HEAD~1"); err != nil || h != first {
		t.Errorf("Resolve HEAD~1: %s %v", h, err)
	}
	if rng, err := Range(r, first, second); err != nil || len(rng) != 1 || rng[0].Hash != second || rng[0].Subject != "second" {
		t.Errorf("Range: %v %v", rng, err)
	}
	missing := plumbing.NewHash(strings.Repeat("ab", 20))
	if _, err := r.Storer.EncodedObject(plumbing.AnyObject, missing); !errors.Is(err, plumbing.ErrObjectNotFound) {
		t.Errorf("a missing object: %v", err)
	}
	if err := r.Storer.HasEncodedObject(missing); !errors.Is(err, plumbing.ErrObjectNotFound) {
		t.Errorf("has a missing object: %v", err)
	}
	if _, err := r.Storer.EncodedObject(plumbing.TreeObject, plumbing.NewHash(second)); !errors.Is(err, plumbing.ErrObjectNotFound) {
		t.Errorf("a commit asked for as a tree: %v", err)
	}
	if n, err := r.Storer.EncodedObjectSize(plumbing.NewHash(second)); err != nil || n == 0 {
		t.Errorf("size %d %v", n, err)
	}
	// Idle: both processes end; the next read starts them again.
	time.Sleep(3 * gitcat.IdleTimeout)
	if cs.Running() {
		t.Error("cat-file processes still running after the idle time")
	}
	if got := readAll(t, r, first); !bytes.Equal([]byte(got["VERSION"]), []byte(readAll(t, plain, first)["VERSION"])) {
		t.Errorf("after the idle stop: VERSION %q", got["VERSION"])
	}
}

// A large object's reader reports a short read (git ended early) as
// io.ErrUnexpectedEOF, never as a clean end: a file is never written short.
func TestCatFileShortReadIsAnError(t *testing.T) {
	p, first, _ := filesRepo(t)
	r, err := git.PlainOpen(p.dir)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := r.CommitObject(plumbing.NewHash(first))
	f, err := c.File("mysql-test/std_data/big.dat")
	if err != nil {
		t.Fatal(err)
	}
	rd, err := gitcat.Reader(filepath.Join(p.dir, ".git"), "blob", f.Hash.String(), f.Size+1) // a large object's reader
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	if _, err := io.ReadAll(rd); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("one byte short: %v, want io.ErrUnexpectedEOF", err)
	}
}
