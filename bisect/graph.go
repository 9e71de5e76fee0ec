package bisect

import (
	"github.com/go-git/go-git/v5"
)

// Graph is the commits of a range by hash, for questions about their
// history; parents outside the range are not followed.
type Graph map[string]Commit

// NewGraph indexes commits (Range's) by hash.
func NewGraph(commits []Commit) Graph {
	g := make(Graph, len(commits))
	for _, c := range commits {
		g[c.Hash] = c
	}
	return g
}

// FirstParentLine is h, its first parent, that one's first parent, ...
// newest first, while they are in the graph and stop (nil: never) does not
// hold for them.
func (g Graph) FirstParentLine(h string, stop func(hash string) bool) []string {
	var out []string
	seen := map[string]bool{}
	for {
		c, ok := g[h]
		if !ok || seen[h] || stop != nil && stop(h) {
			return out
		}
		seen[h] = true
		out = append(out, h)
		if len(c.Parents) == 0 {
			return out
		}
		h = c.Parents[0]
	}
}

// Descends reports whether h is ancestor or has it among its ancestors
// through the graph's commits.
func (g Graph) Descends(h, ancestor string) bool {
	seen := map[string]bool{}
	for queue := []string{h}; len(queue) > 0; queue = queue[1:] {
		x := queue[0]
		if x == ancestor {
			return true
		}
		if !seen[x] {
			seen[x] = true
			queue = append(queue, g[x].Parents...)
		}
	}
	return false
}

// LeaveOutInert returns the range all (Range's, bad its newest) without the
// commits that change only documentation, tests or CI files (InertCommits,
// LeaveOut), and those commits with an example of what each changed.
// Errors: git objects that cannot be read.
func LeaveOutInert(r *git.Repository, all []Commit, bad string) ([]Commit, map[string]string, error) {
	inert, err := InertCommits(r, all)
	if err != nil {
		return nil, nil, err
	}
	return LeaveOut(all, inert, bad), inert, nil
}

// SearchedRange is the range good..bad as a search that left out the inert
// commits (leftOut) or kept them has it, and for the commits left out the
// commit whose server each builds (SameServer; nil when none were).
// Errors: Range's and LeaveOutInert's.
func SearchedRange(r *git.Repository, good, bad string, leftOut bool) ([]Commit, map[string]string, error) {
	all, err := Range(r, good, bad)
	if err != nil || !leftOut {
		return all, nil, err
	}
	kept, _, err := LeaveOutInert(r, all, bad)
	if err != nil {
		return nil, nil, err
	}
	return kept, SameServer(all, kept), nil
}
