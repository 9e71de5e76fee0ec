package bisect

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// taggedRepo makes a linear history with one commit per tag (in order) plus a
// last untagged commit on main, tags annotated or lightweight alternately.
// It returns the repository and the commit of each tag ("HEAD" for the last).
func taggedRepo(t testing.TB, tags ...string) (*porcelain, map[string]string) {
	t.Helper()
	p := newPorcelain(t, 60)
	at := map[string]string{}
	for i, tag := range tags {
		h := p.commit("release " + tag)
		if i%2 == 0 {
			p.git("tag", "-a", "-m", "release "+tag, tag)
		} else {
			p.git("tag", tag)
		}
		at[tag] = h
	}
	at["HEAD"] = p.commit("work after the releases")
	return p, at
}

func resolveIn(t *testing.T, dir, ref string) (string, error) {
	t.Helper()
	r, err := OpenRepo(dir)
	if err != nil {
		t.Fatal(err)
	}
	return Resolve(r, ref)
}

func TestResolveVersionTags(t *testing.T) {
	cases := []struct {
		name string
		tags []string
		want map[string]string // ref -> tag whose commit it resolves to
	}{
		{"mariadb", []string{"mariadb-10.0.22", "mariadb-10.0.26", "mariadb-10.1.1"}, map[string]string{
			"10.0.22": "mariadb-10.0.22", "10.0.26": "mariadb-10.0.26", "10.1.1": "mariadb-10.1.1",
			"mariadb-10.0.22": "mariadb-10.0.22", "mariadb-10.0.26": "mariadb-10.0.26",
		}},
		{"mysql", []string{"mysql-5.7.21", "mysql-5.7.22"}, map[string]string{
			"5.7.22": "mysql-5.7.22", "5.7.21": "mysql-5.7.21", "mysql-5.7.22": "mysql-5.7.22",
		}},
		{"percona", []string{"Percona-Server-5.7.21-21", "Percona-Server-5.7.22-22"}, map[string]string{
			"5.7.22": "Percona-Server-5.7.22-22", "5.7.22-22": "Percona-Server-5.7.22-22",
			"5.7.21": "Percona-Server-5.7.21-21", "Percona-Server-5.7.22-22": "Percona-Server-5.7.22-22",
		}},
		{"plain", []string{"v10.0.22", "10.0.23"}, map[string]string{
			"10.0.22": "v10.0.22", "v10.0.22": "v10.0.22", "10.0.23": "10.0.23",
		}},
		// Two spellings of one release on the same commit are not ambiguous.
		{"same-commit", []string{"mysql-5.7.22"}, map[string]string{"5.7.22": "mysql-5.7.22"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p, at := taggedRepo(t, c.tags...)
			if c.name == "same-commit" {
				p.git("tag", "v5.7.22", at["mysql-5.7.22"])
			}
			for ref, tag := range c.want {
				got, err := resolveIn(t, p.dir, ref)
				if err != nil {
					t.Errorf("Resolve(%q): %v", ref, err)
					continue
				}
				if got != at[tag] {
					t.Errorf("Resolve(%q) = %.10s, want %.10s (%s)", ref, got, at[tag], tag)
				}
			}
		})
	}
}

func TestResolveGitRefs(t *testing.T) {
	p, at := taggedRepo(t, "mariadb-10.0.22", "mariadb-10.0.26")
	head := at["HEAD"]
	for ref, want := range map[string]string{
		"HEAD":                      head,
		"main":                      head,
		head:                        head,
		head[:10]:                   head,
		"HEAD~1":                    at["mariadb-10.0.26"],
		"mariadb-10.0.26~1":         at["mariadb-10.0.22"],
		"refs/tags/mariadb-10.0.22": at["mariadb-10.0.22"], // annotated: the commit, not the tag object
		"refs/tags/mariadb-10.0.26": at["mariadb-10.0.26"], // lightweight
		"mariadb-10.0.22^{commit}":  at["mariadb-10.0.22"],
	} {
		got, err := resolveIn(t, p.dir, ref)
		if err != nil || got != want {
			t.Errorf("Resolve(%q) = %.10s, %v; want %.10s", ref, got, err, want)
		}
	}
}

func TestResolveErrors(t *testing.T) {
	p, _ := taggedRepo(t, "mysql-5.7.21", "mysql-5.7.22", "Percona-Server-5.7.22-22", "mariadb-10.0.22", "mariadb-10.0.26", "mariadb-10.1.1")
	cases := []struct {
		ref  string
		want []string // substrings of the message, in order
	}{
		// Ambiguous: MySQL's and Percona's 5.7.22 are different commits.
		{"5.7.22", []string{"5.7.22", "Percona-Server-5.7.22-22, mysql-5.7.22", "pass the tag itself"}},
		// No such version: the nearest versions come first.
		{"10.0.24", []string{`"10.0.24"`, "nearest tags: mariadb-10.0.22, mariadb-10.0.26, mariadb-10.1.1"}},
		{"5.7.30", []string{"nearest tags: Percona-Server-5.7.22-22, mysql-5.7.22, mysql-5.7.21"}},
		{"8.0.11", []string{"nearest tags: "}},
		// Not a version either.
		{"no-such-branch", []string{`"no-such-branch"`, "nearest tags: "}},
		{"mariadb-10.0.99", []string{"nearest tags: mariadb-10.0.26, mariadb-10.0.22, mariadb-10.1.1"}},
		{"mysql-5.7.30", []string{"nearest tags: mysql-5.7.22, Percona-Server-5.7.22-22, mysql-5.7.21"}},
		// A version names the spellings tried; a series lists its releases.
		{"10.0.24", []string{"read as a version", "tried mariadb-10.0.24, mysql-10.0.24, Percona-Server-10.0.24-NN, v10.0.24, 10.0.24"}},
		{"10.0", []string{"10.0 is a release series", "mariadb-10.0.22, mariadb-10.0.26"}},
		{"5.7", []string{"5.7 is a release series", "mysql-5.7.21", "mysql-5.7.22"}},
		// A walk back past the root says so.
		{"HEAD~99", []string{"HEAD~99 runs past the root: HEAD has 6 commits before it"}},
		{"mysql-5.7.22^^", []string{"mysql-5.7.22^^ runs past the root: mysql-5.7.22 has 1 commits before it"}},
	}
	for _, c := range cases {
		_, err := resolveIn(t, p.dir, c.ref)
		if !errors.Is(err, ErrUsage) {
			t.Errorf("Resolve(%q): %v, want an ErrUsage error", c.ref, err)
			continue
		}
		msg := err.Error()
		rest := msg
		for _, w := range c.want {
			i := strings.Index(rest, w)
			if i < 0 {
				t.Errorf("Resolve(%q): %q lacks %q (in order)", c.ref, msg, w)
				break
			}
			rest = rest[i+len(w):]
		}
	}
	// A repository without tags says so.
	q := newPorcelain(t, 60)
	q.commit("only")
	if _, err := resolveIn(t, q.dir, "10.0.22"); !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "has no tags") {
		t.Errorf("no tags: %v", err)
	}
}

func TestOpenRepoErrors(t *testing.T) {
	if _, err := OpenRepo(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, ErrUsage) {
		t.Errorf("missing dir: %v", err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenRepo(dir); !errors.Is(err, ErrUsage) {
		t.Errorf("not a repository: %v", err)
	}
}

func TestRangeTimesAndErrors(t *testing.T) {
	p := newPorcelain(t, 60)
	good := p.commit("good")
	p.commit("a")
	bad := p.commit("bad")
	p.checkout("-b", "side", good)
	side := p.commit("side")
	r, err := OpenRepo(p.dir)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := Range(r, good, bad)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 2 {
		t.Fatalf("range %v", cs)
	}
	for _, c := range cs {
		want := int64(baseDate + 120)
		if c.Subject == "bad" {
			want = baseDate + 180
		}
		if c.Time != want {
			t.Errorf("%s: Time %d, want %d", c.Subject, c.Time, want)
		}
	}
	for _, c := range []struct{ good, bad, msg string }{
		{good, good, "same commit"},
		{bad, good, "swap"},
		{side, bad, "different branches"},
	} {
		if _, err := Range(r, c.good, c.bad); !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("Range(%.7s, %.7s): %v, want ErrUsage with %q", c.good, c.bad, err, c.msg)
		}
	}
}

// A linked worktree (git worktree add) keeps its objects and tags in the main
// repository: refs resolve there too.
func TestResolveInLinkedWorktree(t *testing.T) {
	p, at := taggedRepo(t, "mariadb-10.0.22", "mariadb-10.0.26")
	wt := filepath.Join(t.TempDir(), "wt")
	p.git("worktree", "add", "-q", wt, "mariadb-10.0.22")
	for ref, want := range map[string]string{"HEAD": at["mariadb-10.0.22"], "10.0.26": at["mariadb-10.0.26"], "main": at["HEAD"]} {
		got, err := resolveIn(t, wt, ref)
		if err != nil || got != want {
			t.Errorf("%s in a linked worktree: %s, %v; want %s", ref, got, err, want)
		}
	}
}

// A clone that borrows its objects (git clone --shared, --reference: the
// usual way to keep several clones of a large server history) reads them
// from the lender as git does: refs resolve, and commits, trees and files
// read; through git (cat-file) and, without git on PATH, through go-git.
func TestOpenRepoBorrowedObjects(t *testing.T) {
	p, at := taggedRepo(t, "mariadb-10.0.22")
	if err := os.WriteFile(filepath.Join(p.dir, "VERSION"), []byte("MYSQL_VERSION_MAJOR=10\nMYSQL_VERSION_MINOR=0\nMYSQL_VERSION_PATCH=23\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p.git("add", "VERSION")
	at["mariadb-10.0.23"] = p.commit("release 10.0.23")
	p.git("tag", "mariadb-10.0.23")
	p.git("gc", "-q")
	for _, how := range [][]string{{"--shared"}, {"--reference", p.dir}} {
		clone := filepath.Join(t.TempDir(), "clone")
		runGit(t, "", nil, nil, append(append([]string{"clone", "-q"}, how...), p.dir, clone)...)
		if b, err := os.ReadFile(filepath.Join(clone, ".git", "objects", "info", "alternates")); err != nil || !strings.Contains(string(b), p.dir) {
			t.Fatalf("git clone %s: no alternates naming the lender (%v)", how[0], err)
		}
		for _, withGit := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/git=%v", how[0], withGit), func(t *testing.T) {
				if !withGit {
					t.Setenv("PATH", t.TempDir())
				}
				r, err := OpenRepo(clone)
				if err != nil {
					t.Fatal(err)
				}
				h, err := Resolve(r, "10.0.23")
				if err != nil || h != at["mariadb-10.0.23"] {
					t.Fatalf("Resolve 10.0.23 in the clone: %s, %v; want %s", h, err, at["mariadb-10.0.23"])
				}
				c, err := r.CommitObject(plumbing.NewHash(h))
				if err != nil {
					t.Fatalf("read commit %.10s: %v", h, err)
				}
				tree, err := c.Tree()
				if err != nil {
					t.Fatal(err)
				}
				f, err := tree.File("VERSION")
				if err != nil {
					t.Fatal(err)
				}
				if s, err := f.Contents(); err != nil || !strings.Contains(s, "PATCH=23") {
					t.Errorf("VERSION in the clone: %q, %v", s, err)
				}
			})
		}
	}
}

func TestReleases(t *testing.T) {
	p, at := taggedRepo(t, "mariadb-10.0.22", "v10.0.23", "Percona-Server-5.7.44-48", "mariadb-10.0.24-rc", "nightly", "mysql-8.0")
	p.git("tag", "mariadb-10.0.25", at["mariadb-10.0.22"]) // two on one commit: the higher
	r, err := OpenRepo(p.dir)
	if err != nil {
		t.Fatal(err)
	}
	var commits []string
	for _, h := range at {
		commits = append(commits, h)
	}
	got, err := Releases(r, commits)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Release{
		at["mariadb-10.0.22"]:          {Tag: "mariadb-10.0.25", Version: "10.0.25"},
		at["v10.0.23"]:                 {Tag: "v10.0.23", Version: "10.0.23"},
		at["Percona-Server-5.7.44-48"]: {Tag: "Percona-Server-5.7.44-48", Version: "5.7.44-48"},
	}
	if len(got) != len(want) {
		t.Errorf("Releases = %v, want %v", got, want)
	}
	for c, w := range want {
		if got[c] != w {
			t.Errorf("Releases[%.10s] = %+v, want %+v", c, got[c], w)
		}
	}
	// Only the commits asked for.
	if got, _ := Releases(r, []string{at["v10.0.23"]}); len(got) != 1 {
		t.Errorf("Releases of one commit = %v", got)
	}
}
