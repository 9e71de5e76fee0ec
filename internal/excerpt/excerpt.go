// Package excerpt picks the lines of a log that explain a failure, for error
// messages that fit on one line. It is shared by the plumbing packages (build,
// serverctl), which must not import each other.
package excerpt

import "strings"

// Lines returns the non-empty lines of log (trimmed) for which match is true, at
// most maxMatches of them, first ones first; when none match, the last tail
// lines. match may be nil (then only the tail is returned).
func Lines(log string, match func(line string) bool, maxMatches, tail int) []string {
	var hits, all []string
	for _, l := range strings.Split(log, "\n") {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		all = append(all, l)
		if match != nil && match(l) && len(hits) < maxMatches {
			hits = append(hits, l)
		}
	}
	if len(hits) > 0 {
		return hits
	}
	if len(all) > tail {
		all = all[len(all)-tail:]
	}
	return all
}

// Contains returns a matcher for lines holding any of the substrings.
func Contains(subs ...string) func(string) bool {
	return func(l string) bool {
		for _, s := range subs {
			if strings.Contains(l, s) {
				return true
			}
		}
		return false
	}
}
