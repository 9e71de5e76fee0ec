package build

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	git "github.com/go-git/go-git/v5"
)

// Submodules are checked out at the recorded commit from the repository's
// .git/modules, with the submodule's origin gone (no network); a commit the
// repository does not have is a clear error.
func TestCheckoutSubmodules(t *testing.T) {
	lib := t.TempDir()
	gl := gitIn(t, lib)
	gl("init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(lib, "lib.c"), []byte("int lib = 1;\n"), 0o644)
	gl("add", "-A")
	gl("commit", "-qm", "lib 1")
	os.WriteFile(filepath.Join(lib, "lib.c"), []byte("int lib = 2;\n"), 0o644)
	os.WriteFile(filepath.Join(lib, "extra.c"), []byte("int extra;\n"), 0o644)
	gl("add", "-A")
	gl("commit", "-qm", "lib 2")
	lib2 := gl("rev-parse", "HEAD")

	main := t.TempDir()
	g := gitIn(t, main)
	g("init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(main, "main.c"), []byte("int main;\n"), 0o644)
	g("-c", "protocol.file.allow=always", "submodule", "-q", "add", lib, "extra/lib")
	g("-C", "extra/lib", "checkout", "-q", "HEAD~1")
	g("add", "-A")
	g("commit", "-qm", "with lib 1")
	c1 := g("rev-parse", "HEAD")
	g("-C", "extra/lib", "checkout", "-q", lib2)
	g("add", "-A")
	g("commit", "-qm", "lib moved to 2")
	c2 := g("rev-parse", "HEAD")
	// A commit that records a submodule commit nobody fetched.
	g("update-index", "--cacheinfo", "160000,1111111111111111111111111111111111111111,extra/lib")
	g("commit", "-qm", "lib at a commit that is not here")
	c3 := g("rev-parse", "HEAD")
	g("reset", "-q", "--hard", c2)
	if err := os.RemoveAll(lib); err != nil { // the submodule's URL is gone
		t.Fatal(err)
	}
	// The user's checked-out submodule must not be what is read: remove it,
	// leaving only .git/modules.
	if err := os.RemoveAll(filepath.Join(main, "extra", "lib")); err != nil {
		t.Fatal(err)
	}

	repo, err := git.PlainOpen(main)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	read := func(name string) string { b, _ := os.ReadFile(filepath.Join(dir, name)); return string(b) }
	if _, err := Checkout(repo, c1, dir); err != nil {
		t.Fatal(err)
	}
	if got := read("extra/lib/lib.c"); got != "int lib = 1;\n" {
		t.Fatalf("submodule at c1: lib.c %q", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "extra/lib/extra.c")); err == nil {
		t.Error("a file of the submodule's later commit is there at c1")
	}
	st, _ := os.Stat(filepath.Join(dir, "main.c"))
	n, err := Checkout(repo, c2, dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := read("extra/lib/lib.c"); got != "int lib = 2;\n" || read("extra/lib/extra.c") != "int extra;\n" {
		t.Fatalf("submodule at c2: lib.c %q", got)
	}
	if n != 2 {
		t.Errorf("c1 → c2 wrote %d files, want the submodule's 2", n)
	}
	if st2, _ := os.Stat(filepath.Join(dir, "main.c")); !st2.ModTime().Equal(st.ModTime()) {
		t.Error("main.c was rewritten")
	}
	_, err = Checkout(repo, c3, dir)
	if err == nil || !strings.Contains(err.Error(), "git submodule update --init --recursive") || !strings.Contains(err.Error(), "1111111111") {
		t.Fatalf("missing submodule commit: %v", err)
	}
}
