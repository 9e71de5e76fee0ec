// Package spell finds what a user probably meant to type: the nearest of a
// set of names, when it is near enough not to be a guess.
package spell

// Near reports whether typed is a plausible misspelling of name: an edit
// distance (distance) of at most a third of typed's length, and at least
// 2 for short names ("thraeds" is near "threads"; "nosuch" is near nothing
// of perfbisect's).
func Near(typed, name string) bool {
	return distance(typed, name) <= max(2, len([]rune(typed))/3)
}

// Nearest is the name of names nearest to typed when it is Near, else "".
func Nearest(typed string, names []string) string {
	best, bestD := "", -1
	for _, n := range names {
		if d := distance(typed, n); Near(typed, n) && (bestD < 0 || d < bestD) {
			best, bestD = n, d
		}
	}
	return best
}

// distance is the optimal-string-alignment edit distance between a and b,
// in runes: insertions, deletions, substitutions and transpositions of two
// neighbours ("thraeds") each count 1.
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}
