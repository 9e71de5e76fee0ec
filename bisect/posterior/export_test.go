package posterior

// Next returns the candidate to run next: the one whose run is expected to
// give the most information about the first bad commit per unit of cost (the
// mutual information of a run's value and the commit's side, which is
// largest where the posterior probability of being bad is one half:
// Horstein's rule), and false when no candidate can be measured. The bad
// revision is never proposed (it is a reference).
func (m *Model) Next(c Cost) (string, bool) {
	pts := m.NextK(1, c)
	if len(pts) == 0 {
		return "", false
	}
	return pts[0], true
}
