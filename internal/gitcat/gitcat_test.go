package gitcat

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// repo makes a git directory with one commit of one file; it returns the git
// directory and the hashes of the commit and the file's blob.
func repo(t *testing.T) (gitDir, commit, blob string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir := t.TempDir()
	run := func(args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "HOME="+dir, "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
		return strings.TrimSpace(string(out))
	}
	run("init", "-q")
	if err := os.WriteFile(filepath.Join(dir, "VERSION"), []byte("MYSQL_VERSION_MAJOR=10\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run("add", "VERSION")
	run("commit", "-q", "-m", "one")
	return filepath.Join(dir, ".git"), run("rev-parse", "HEAD"), run("rev-parse", "HEAD:VERSION")
}

// A batch answers object after object: contents of the type asked for, an
// object of another type or a missing one as ErrMissing with the process
// still answering; a check batch gives types and sizes only.
func TestBatch(t *testing.T) {
	gitDir, commit, blob := repo(t)
	b, err := Start(gitDir, false)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var buf bytes.Buffer
	if typ, size, err := b.Contents(blob, "blob", &buf); err != nil || typ != "blob" || size != 23 || buf.String() != "MYSQL_VERSION_MAJOR=10\n" {
		t.Errorf("blob: %s %d %q %v", typ, size, buf.String(), err)
	}
	if _, _, err := b.Contents(commit, "blob", io.Discard); !errors.Is(err, ErrMissing) {
		t.Errorf("a commit asked for as a blob: %v", err)
	}
	if _, _, err := b.Contents(strings.Repeat("0", 40), "", io.Discard); !errors.Is(err, ErrMissing) {
		t.Errorf("a missing object: %v", err)
	}
	buf.Reset()
	if typ, _, err := b.Contents(commit, "", &buf); err != nil || typ != "commit" || !strings.Contains(buf.String(), "\n\none\n") {
		t.Errorf("after two refusals: %s %q %v", typ, buf.String(), err)
	}
	if _, _, err := b.Info(blob); err == nil {
		t.Error("Info of a --batch process answered")
	}
	c, err := Start(gitDir, true)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if typ, size, err := c.Info(blob); err != nil || typ != "blob" || size != 23 {
		t.Errorf("info: %s %d %v", typ, size, err)
	}
	if _, _, err := c.Contents(blob, "", io.Discard); err == nil {
		t.Error("Contents of a --batch-check process answered")
	}
	b.Close()
	b.Close() // twice is harmless
	if _, _, err := b.Contents(blob, "", io.Discard); err == nil {
		t.Error("a closed batch answered")
	}
}

// Reader streams an object; one that ends short of the size given is
// io.ErrUnexpectedEOF.
func TestReader(t *testing.T) {
	gitDir, _, blob := repo(t)
	for _, c := range []struct {
		size int64
		ok   bool
	}{{23, true}, {24, false}} {
		r, err := Reader(gitDir, "blob", blob, c.size)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(r)
		r.Close()
		if c.ok != (err == nil) || (c.ok && string(b) != "MYSQL_VERSION_MAJOR=10\n") || (!c.ok && !errors.Is(err, io.ErrUnexpectedEOF)) {
			t.Errorf("size %d: %q %v", c.size, b, err)
		}
	}
}
