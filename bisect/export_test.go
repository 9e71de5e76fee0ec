package bisect

// NewSearch is NewSearchOptions with the default options (every ancestor
// counts, merges' side branches included).
func NewSearch(commits []Commit, good []string, bad string) (*Search, error) {
	return NewSearchOptions(commits, good, bad, Options{})
}

// IsCandidate reports whether h may still be the first bad commit: an
// ancestor of the current bad (inclusive; in first-parent mode, on its
// first-parent chain) that is not an ancestor of a good commit.
func (s *Search) IsCandidate(h string) bool {
	_, ok := s.index[h]
	return ok
}

// weights counts, for every candidate, the candidates reachable from it
// (itself included; first parents only in first-parent mode).
func (s *Search) weights() map[string]int {
	_, w := s.bisection(s.eligible, false)
	out := make(map[string]int, len(w))
	for i, h := range s.order {
		out[h] = w[i]
	}
	return out
}
