package app

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/bisect/store"
	"github.com/perfbisect/perfbisect/internal/testenv"
	"github.com/perfbisect/perfbisect/serverctl"
)

// TestResolveSides reads the forms of a side: a revision of --repo (a
// branch with a / is a revision), DIR:REV of another tree, an installed
// server's directory; the keys that tell them apart; and what is refused,
// naming the side.
func TestResolveSides(t *testing.T) {
	testenv.Require(t, testenv.Server)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	repo, shas, g := gitRepo(t, 3)
	g("branch", "origin/main", shas[1])
	other, oshas, _ := gitRepo(t, 2)
	r, err := bisect.OpenRepo(repo)
	if err != nil {
		t.Fatal(err)
	}
	su := &Setup{Repo: r, RepoRoot: repo}
	colon := filepath.Join(t.TempDir(), "a:b")
	if err := os.Rename(other, colon); err != nil {
		t.Fatal(err)
	}
	other = colon
	sides, err := ResolveSides(ctx, su, []string{"origin/main", "HEAD", other + ":HEAD~1", "/usr", repo + ":HEAD~2"})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ commit, tree string }{{shas[1], ""}, {shas[2], ""}, {oshas[0], other}, {"", ""}, {shas[0], ""}}
	for i, w := range want {
		s := sides[i]
		if s.Spec.Commit != w.commit || s.Tree != w.tree {
			t.Errorf("side %d %s: commit %.10s tree %q, want %.10s %q", i+1, s.Arg, s.Spec.Commit, s.Tree, w.commit, w.tree)
		}
	}
	if !sides[0].Plain() || sides[0].Key != shas[1] || sides[2].Plain() || !strings.HasPrefix(sides[2].Key, "side-") ||
		sides[3].Install == nil || sides[3].Spec.Basedir != "/usr" || !sides[4].Plain() {
		t.Errorf("keys: %+v", sides)
	}
	// One build under two option files: two sides, two keys.
	a := filepath.Join(t.TempDir(), "a.cnf")
	b := filepath.Join(t.TempDir(), "b.cnf")
	for _, p := range []string{a, b} {
		if err := os.WriteFile(p, []byte("[mysqld]\nmax_connections="+filepath.Base(p)[:1]+"00\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{a, b} {
		of, err := serverctl.LoadOptionFile(p)
		if err != nil {
			t.Fatal(err)
		}
		su.SideOptionFiles = append(su.SideOptionFiles, of)
	}
	sides, err = ResolveSides(ctx, su, []string{"HEAD", "HEAD"})
	if err != nil || sides[0].Key == sides[1].Key || sides[0].Plain() || sides[1].Spec.OptionFile.Path != b {
		t.Errorf("HEAD twice under two files: %+v, %v", sides, err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"HEAD", "HEAD", "HEAD~1"}, "my-cnf given 2 times for 3 sides"}, // --my-cnf on the command line
		{[]string{"HEAD", "no/such/thing"}, "side 2 no/such/thing: neither a revision of the repository nor a directory"},
		{[]string{"HEAD", t.TempDir()}, "not an installed server"},
		{[]string{"HEAD", t.TempDir() + ":HEAD"}, "not a git repository"},
		{[]string{"HEAD"}, "at least two sides"},
		{[]string{"HEAD", "/no/such/tree:HEAD"}, "the directory /no/such/tree of DIR:REV does not exist"},
	} {
		if _, err := ResolveSides(ctx, su, c.args); !isUsage(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want a usage error saying %q", c.args, err, c.want)
		}
	}
	su.SideOptionFiles = nil
	if _, err := ResolveSides(ctx, su, []string{"HEAD", repo + ":" + shas[2]}); !isUsage(err) || !strings.Contains(err.Error(), "same server under the same option file") {
		t.Errorf("HEAD and REPO:HEAD: %v", err)
	}
}

// TestContinued: an interrupted comparison continues its own finished
// pairs and its unfinished one; pairs it did not reach are measured anew
// even when an older finished comparison stored them; with nothing
// unfinished, everything is measured anew.
func TestContinued(t *testing.T) {
	at := func(min int, state store.State) *store.Session {
		return &store.Session{ID: int64(min), State: state, Created: time.Date(2026, 12, 4, 1, min, 0, 0, time.UTC)}
	}
	old1, old2, old3 := at(1, store.Done), at(2, store.Done), at(3, store.Done) // a finished comparison
	new1, new2 := at(10, store.Done), at(11, store.Running)                     // the call killed in its second pair
	got := continued([]*store.Session{new1, new2, old3, nil})
	if got[0] != new1 || got[1] != new2 || got[2] != nil || got[3] != nil {
		t.Errorf("interrupted call: %v", got)
	}
	got = continued([]*store.Session{old1, old2, old3})
	if got[0] != nil || got[1] != nil || got[2] != nil {
		t.Errorf("a finished comparison run again: %v, want all measured anew", got)
	}
	later := at(12, store.Failed) // a pair after the unfinished one, begun later: an earlier attempt of this call's chain
	got = continued([]*store.Session{new1, new2, later})
	if got[2] != later {
		t.Errorf("a later unfinished pair: %v", got)
	}
	// A pair whose side could not be measured (a build the machine failed)
	// is measured anew, never replayed.
	unmeasurable := at(13, store.Reset)
	got = continued([]*store.Session{unmeasurable, nil})
	if got[0] != nil || got[1] != nil {
		t.Errorf("a pair that could not be measured: %v, want it measured anew", got)
	}
}
