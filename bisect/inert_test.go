package bisect

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/perfbisect/perfbisect/internal/testenv"
)

func TestInertPath(t *testing.T) {
	for name, want := range map[string]bool{
		"README.md": true, "README": true, "Docs/INSTALL-BINARY": true, "mysql-test/main/select.result": true,
		"storage/innobase/README": true, "COPYING": true, ".github/workflows/ci.yml": true, "CREDITS": true, "docs/x.md": true,
		// What the build reads is never inert, even among tests or docs.
		"mysql-test/CMakeLists.txt": false, "Docs/CMakeLists.txt": false, "cmake/os/Linux.cmake": false, "VERSION": false,
		"sql/sql_select.cc": false, "sql/share/errmsg-utf8.txt": false, "support-files/my-small.cnf.sh": false,
		"include/my_config.h.cmake.in": false, "storage/innobase/include/univ.i": false, "debian/rules": false,
	} {
		if got := InertPath(name); got != want {
			t.Errorf("InertPath(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestLeaveOut: left-out commits disappear, their children take their
// parents (through a chain of them, and on both sides of a merge), the bad
// endpoint and merges are kept.
func TestLeaveOut(t *testing.T) {
	// g <- a <- d1 <- d2 <- b <- m(b, s) <- bad(doc); g <- d3 <- s
	commits := []Commit{
		{Hash: "bad", Parents: []string{"m"}},
		{Hash: "m", Parents: []string{"b", "s"}},
		{Hash: "s", Parents: []string{"d3"}},
		{Hash: "d3", Parents: []string{"g"}},
		{Hash: "b", Parents: []string{"d2"}},
		{Hash: "d2", Parents: []string{"d1"}},
		{Hash: "d1", Parents: []string{"a"}},
		{Hash: "a", Parents: []string{"g"}},
	}
	out := map[string]string{"d1": "README", "d2": "README", "d3": "Docs/x", "bad": "README.md", "m": "x.md"}
	got := LeaveOut(commits, out, "bad")
	want := []Commit{
		{Hash: "bad", Parents: []string{"m"}},
		{Hash: "m", Parents: []string{"b", "s"}},
		{Hash: "s", Parents: []string{"g"}},
		{Hash: "b", Parents: []string{"a"}},
		{Hash: "a", Parents: []string{"g"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("LeaveOut:\n got %+v\nwant %+v", got, want)
	}
	if commits[4].Parents[0] != "d2" {
		t.Error("LeaveOut changed its input")
	}
	if got := LeaveOut(commits, nil, "bad"); !reflect.DeepEqual(got, commits) {
		t.Error("nothing to leave out changed the commits")
	}
}

// TestInertCommits: on a real repository, a commit that changes only
// README.md and mysql-test/ is listed, one that also touches a source file
// or a CMakeLists.txt under mysql-test/ is not, nor an empty commit, nor a
// merge.
func TestInertCommits(t *testing.T) {
	testenv.Require(t, testenv.Git)
	p := newPorcelain(t, 60)
	write := func(name, text string) {
		path := filepath.Join(p.dir, name)
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		p.git("add", "-A")
	}
	write("sql/sql_select.cc", "int x;\n")
	write("README.md", "server\n")
	good := p.commit("good")
	write("README.md", "server, faster\n")
	write("mysql-test/main/t.result", "1\n")
	docs := p.commit("docs and tests")
	write("README.md", "server, slower\n")
	write("sql/sql_select.cc", "int y;\n")
	code := p.commit("code and docs")
	write("mysql-test/CMakeLists.txt", "add_subdirectory(lib)\n")
	cmake := p.commit("a CMakeLists.txt among the tests")
	empty := p.commit("empty")
	p.checkout("-b", "side", good)
	write("Docs/notes", "x\n")
	side := p.commit("side docs")
	p.checkout("main")
	merge := p.merge("merge side", "side")
	r, err := OpenRepo(p.dir)
	if err != nil {
		t.Fatal(err)
	}
	commits, err := Range(r, good, merge)
	if err != nil {
		t.Fatal(err)
	}
	got, err := InertCommits(r, commits)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{docs: "README.md", side: "Docs/notes"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("InertCommits = %v, want %v (code %.7s, cmake %.7s, empty %.7s, merge %.7s)", got, want, code, cmake, empty, merge)
	}
}

// TestSameServer: a left-out commit builds the server of its nearest kept
// ancestor, through a chain of them, or of good outside the range.
func TestSameServer(t *testing.T) {
	all := []Commit{
		{Hash: "bad", Parents: []string{"d2"}},
		{Hash: "d2", Parents: []string{"d1"}},
		{Hash: "d1", Parents: []string{"a"}},
		{Hash: "a", Parents: []string{"d0"}},
		{Hash: "d0", Parents: []string{"g"}},
	}
	kept := LeaveOut(all, map[string]string{"d0": "x", "d1": "x", "d2": "x"}, "bad")
	want := map[string]string{"d2": "a", "d1": "a", "d0": "g"}
	if got := SameServer(all, kept); !reflect.DeepEqual(got, want) {
		t.Errorf("SameServer = %v, want %v", got, want)
	}
}
