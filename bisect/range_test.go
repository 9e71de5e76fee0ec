package bisect

import (
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/perfbisect/perfbisect/internal/testenv"
)

// TestRangeByGitIsRangeByGoGit: the git command's listing of a range, put in
// go-git's walk order, is exactly go-git's (hashes, order, parents, times,
// subjects) on random histories with merges and on messages of several
// lines, so that a session resumes the same whichever listed it.
func TestRangeByGitIsRangeByGoGit(t *testing.T) {
	testenv.Require(t, testenv.Git)
	rng := rand.New(rand.NewSource(7))
	for k := 0; k < 12; k++ {
		nodes := randomDAG(rng, 20+rng.Intn(60), k%4)
		dir, hashes := fastImport(t, nodes)
		good, bad := hashes[0], hashes[len(hashes)-1]
		r, err := OpenRepo(dir)
		if err != nil {
			t.Fatal(err)
		}
		want, err := rangeGoGit(r, good, bad)
		if err != nil {
			t.Fatal(err)
		}
		got, err := rangeGit(gitDirOf(r), good, bad)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("dag %d: git's range differs from go-git's:\n got %v\nwant %v", k, brief(got), brief(want))
		}
	}
	p := newPorcelain(t, 60)
	good := p.commit("root")
	p.git("commit", "-q", "--allow-empty", "-m", "MDEV-1 a subject\nthat git's %s would join\n\nand a body")
	p.commit("x")
	p.checkout("-b", "side", "HEAD~1")
	p.commit("y")
	p.checkout("main")
	bad := p.merge("merge side", "side")
	r, err := OpenRepo(p.dir)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := rangeGoGit(r, good, bad)
	got, err := rangeGit(gitDirOf(r), good, bad)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("%v:\n got %v\nwant %v", err, brief(got), brief(want))
	}
	found := false
	for _, c := range got {
		found = found || c.Subject == "MDEV-1 a subject"
	}
	if !found {
		t.Errorf("no commit with the subject line of the message of three lines: %+v", got)
	}
	// good after bad: the same refusal as go-git's.
	if _, err := Range(r, bad, good); err == nil || !strings.Contains(err.Error(), "swap good and bad") {
		t.Errorf("good after bad: %v", err)
	}
}

// TestRangeOfAShallowClone: a shallow clone (as CI checks out) that holds
// the whole range is bisected; one that does not is refused with the fetch
// that fixes it.
func TestRangeOfAShallowClone(t *testing.T) {
	testenv.Require(t, testenv.Git)
	p := newPorcelain(t, 60)
	var hs []string
	for i := 0; i < 12; i++ {
		hs = append(hs, p.commit(fmt.Sprint("c", i)))
	}
	clone := t.TempDir()
	runGit(t, clone, nil, nil, "clone", "-q", "--depth", "5", "file://"+p.dir, ".")
	r, err := OpenRepo(clone)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := Range(r, hs[8], hs[11])
	if err != nil || len(cs) != 3 || cs[0].Hash != hs[11] {
		t.Fatalf("range of 3 commits in a depth-5 clone: %v %v", brief(cs), err)
	}
	if _, err := Range(r, hs[2], hs[11]); err == nil {
		t.Errorf("a range reaching past the clone's depth was listed")
	}
}

func brief(cs []Commit) string {
	var b []string
	for _, c := range cs {
		b = append(b, fmt.Sprintf("%.7s%v", c.Hash, len(c.Parents)))
	}
	return strings.Join(b, " ")
}

// TestResolveRefBeforeAbbreviatedHash: a tag named "bad" (hex) is the tag,
// not one of the commits whose hash starts with bad — with the git command
// and without it (go-git's own resolution took the first such commit).
func TestResolveRefBeforeAbbreviatedHash(t *testing.T) {
	testenv.Require(t, testenv.Git)
	nodes := make([]dagNode, 12000)
	for i := range nodes {
		nodes[i].date = baseDate + int64(i)
		if i > 0 {
			nodes[i].parents = []int{i - 1}
		}
	}
	dir, hashes := fastImport(t, nodes)
	decoy := ""
	for _, h := range hashes[1:] {
		if strings.HasPrefix(h, "bad") {
			decoy = h
		}
	}
	if decoy == "" {
		t.Skip("no commit hash starts with bad in this history")
	}
	runGit(t, dir, nil, nil, "tag", "bad", hashes[0])
	for _, withGit := range []bool{true, false} {
		if !withGit {
			t.Setenv("PATH", t.TempDir()) // no git command: go-git alone
		}
		got, err := resolveIn(t, dir, "bad")
		if err != nil || got != hashes[0] {
			t.Errorf("git command %v: Resolve(bad) = %.10s %v, want the tag's %.10s (not the commit %.10s)", withGit, got, err, hashes[0], decoy)
		}
	}
}

// TestOpenRepoSaysWhatIsWrong: a --repo that is missing, a file, a
// directory outside git, or a server tree without git history each get
// their own usage error naming the path and what to do.
func TestOpenRepoSaysWhatIsWrong(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "my.cnf")
	os.WriteFile(file, []byte("[mysqld]\n"), 0o644)
	plain := filepath.Join(dir, "plain")
	tree := filepath.Join(dir, "mariadb-10.0.22")
	os.MkdirAll(plain, 0o755)
	os.MkdirAll(filepath.Join(tree, "sql"), 0o755)
	os.WriteFile(filepath.Join(tree, "CMakeLists.txt"), nil, 0o644)
	for _, c := range []struct{ dir, want string }{
		{filepath.Join(dir, "nope"), "no such directory"},
		{file, "not a directory"},
		{plain, "not a git repository"},
		{tree, "a server source tree without git history"},
	} {
		_, err := OpenRepo(c.dir)
		if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), c.dir) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("OpenRepo(%s) = %v, want a usage error saying %q", c.dir, err, c.want)
		}
	}
}
