package bisect

import (
	"fmt"
	"path"
	"slices"
	"strings"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// InertPath reports whether a change to the file at name (slash-separated,
// relative to the tree's root) cannot change the server a build of the tree
// gives: documentation (README*, *.md, ChangeLog, Docs/), licences, the test suite
// (mysql-test/), CI and editor settings. Nothing CMake reads is inert
// (CMakeLists.txt, *.cmake, *.cmake.in, VERSION, MYSQL_VERSION), wherever
// it is, nor anything else: the list is short on purpose.
func InertPath(name string) bool {
	base := path.Base(name)
	if base == "CMakeLists.txt" || strings.HasSuffix(base, ".cmake") || strings.HasSuffix(base, ".cmake.in") ||
		name == "VERSION" || name == "MYSQL_VERSION" {
		return false
	}
	for _, dir := range []string{"Docs/", "mysql-test/", ".github/", ".gitlab/", ".circleci/"} {
		if strings.HasPrefix(name, dir) {
			return true
		}
	}
	if slices.Contains([]string{".gitignore", ".gitattributes", ".mailmap", ".editorconfig", ".clang-format", ".travis.yml", ".gitlab-ci.yml",
		"appveyor.yml", "CREDITS", "AUTHORS", "THIRDPARTY", "EXCEPTIONS-CLIENT", "ChangeLog", "NEWS"}, base) {
		return true
	}
	for _, prefix := range []string{"README", "COPYING", "LICENSE", "CONTRIBUTING", "CODING_STANDARDS"} {
		if strings.HasPrefix(base, prefix) {
			return true
		}
	}
	return strings.HasSuffix(base, ".md") || strings.HasSuffix(base, ".markdown") || strings.HasSuffix(base, ".rst")
}

// InertCommits returns the commits of the range (commits, as Range gives
// them) that change only inert files (InertPath) against their one parent,
// each with an example of what it changed ("README.md"): a build of such a
// commit gives its parent's server, so it cannot be the first bad commit.
// Merges, and commits that change nothing (git commit --allow-empty), are
// not listed. Errors: git objects that cannot be read.
func InertCommits(r *git.Repository, commits []Commit) (map[string]string, error) {
	out := map[string]string{}
	for _, c := range commits {
		if len(c.Parents) != 1 {
			continue
		}
		changed, err := ChangedPaths(r, c.Parents[0], c.Hash)
		if err != nil {
			return nil, err
		}
		if len(changed) > 0 && !slices.ContainsFunc(changed, func(p string) bool { return !InertPath(p) }) {
			out[c.Hash] = changed[0]
		}
	}
	return out, nil
}

// ChangedPaths lists the files whose content or mode differ between the
// trees of commits from and to (go-git compares subtrees by hash, so only
// changed directories are read).
func ChangedPaths(r *git.Repository, from, to string) ([]string, error) {
	tree := func(h string) (*object.Tree, error) {
		c, err := r.CommitObject(plumbing.NewHash(h))
		if err != nil {
			return nil, fmt.Errorf("commit %.10s: %w", h, err)
		}
		return c.Tree()
	}
	a, err := tree(from)
	if err != nil {
		return nil, err
	}
	b, err := tree(to)
	if err != nil {
		return nil, err
	}
	changes, err := object.DiffTree(a, b)
	if err != nil {
		return nil, fmt.Errorf("diff %.10s..%.10s: %w", from, to, err)
	}
	var paths []string
	for _, ch := range changes {
		for _, name := range []string{ch.From.Name, ch.To.Name} {
			if name != "" && !slices.Contains(paths, name) {
				paths = append(paths, name)
			}
		}
	}
	slices.Sort(paths)
	return paths, nil
}

// LeaveOut returns commits without those in out, each child of a left-out
// commit taking the left-out commit's parent in its place (through any
// chain of them), so that the search never tests them and never names one.
// Commits with other than one parent are never left out; neither is keep
// (the bad endpoint). It returns commits itself when nothing is left out.
func LeaveOut(commits []Commit, out map[string]string, keep string) []Commit {
	parentOf := map[string]string{}
	for _, c := range commits {
		if _, ok := out[c.Hash]; ok && c.Hash != keep && len(c.Parents) == 1 {
			parentOf[c.Hash] = c.Parents[0]
		}
	}
	if len(parentOf) == 0 {
		return commits
	}
	var kept []Commit
	for _, c := range commits {
		if _, gone := parentOf[c.Hash]; gone {
			continue
		}
		c.Parents = slices.Clone(c.Parents)
		for i, p := range c.Parents {
			c.Parents[i] = follow(parentOf, p)
		}
		c.Parents = slices.Compact(c.Parents) // both sides of a merge can lead to one commit
		kept = append(kept, c)
	}
	return kept
}

// SameServer maps each commit of all that kept lacks (LeaveOut's) to the
// commit whose server it builds: its nearest ancestor through one-parent
// left-out commits that kept holds, or the commit outside the range (good)
// where the chain leaves it.
func SameServer(all, kept []Commit) map[string]string {
	in := map[string]bool{}
	for _, c := range kept {
		in[c.Hash] = true
	}
	parentOf := map[string]string{}
	for _, c := range all {
		if !in[c.Hash] && len(c.Parents) == 1 {
			parentOf[c.Hash] = c.Parents[0]
		}
	}
	out := map[string]string{}
	for h := range parentOf {
		out[h] = follow(parentOf, h)
	}
	return out
}

// follow walks from h through parentOf (a left-out commit's one parent)
// to the first commit that is not left out.
func follow(parentOf map[string]string, h string) string {
	for {
		p, ok := parentOf[h]
		if !ok {
			return h
		}
		h = p
	}
}
