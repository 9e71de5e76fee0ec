package store

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Identity is everything that shapes a session's answer, by name: the
// endpoints, the decision policy, the workload (as one value, "workload",
// and field by field, "workload NAME"), the build recipe, the option file
// and its content ("my-cnf content"), and what the command adds (the
// repository, "repo"; the search; the metric). Two sessions with equal
// identities may share stored runs; a start with another identity than the
// unfinished session's is refused, naming the difference (Diff). It is
// stored as the session's config, a JSON object of strings.
type Identity map[string]string

// Key hashes the identity: the first 16 hex digits of the SHA-256 of every
// name and value in name order, each followed by a NUL byte. It is the key
// stored with the session (sessions begun by earlier perfbisects have the
// same key for the same identity).
func (id Identity) Key() string {
	names := make([]string, 0, len(id))
	for k := range id {
		names = append(names, k)
	}
	sort.Strings(names)
	h := sha256.New()
	for _, k := range names {
		fmt.Fprintf(h, "%s\x00%s\x00", k, id[k])
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// Diff names what differs in id from the stored identity old, sorted and
// comma-separated: `threshold "0.05" -> "0.07"` for short values, "NAME
// changed" for long ones, the option file's content in words; the
// workload's fields one by one rather than the whole; a setting only the
// stored identity has, as `keep "x" -> ""`. "" when nothing differs.
func (id Identity) Diff(old Identity) string {
	var diffs []string
	for k, o := range old {
		if _, ok := id[k]; !ok && k != "workload" {
			diffs = append(diffs, fmt.Sprintf("%s %q -> \"\"", k, o))
		}
	}
	for k, v := range id {
		if k == "workload" {
			continue // its fields are compared one by one
		}
		if o, ok := old[k]; !ok || o != v {
			if k == "my-cnf content" {
				diffs = append(diffs, "the option file's content (or a file it includes)")
			} else if len(v) > 60 || len(o) > 60 {
				diffs = append(diffs, k+" changed")
			} else {
				diffs = append(diffs, fmt.Sprintf("%s %q -> %q", k, o, v))
			}
		}
	}
	sort.Strings(diffs)
	return strings.Join(diffs, ", ")
}

// LeavesOutDocCommits reports whether a bisection left the commits that
// change only documentation, tests or CI files out of its search.
func (id Identity) LeavesOutDocCommits() bool { return id["doc-commits"] == "left out" }

// HasDocCommits reports whether the identity says what a bisection did with
// the commits that change only documentation, tests or CI files (sessions
// begun before they were left out do not: they tested them).
func (id Identity) HasDocCommits() bool {
	_, ok := id["doc-commits"]
	return ok
}

// Repo is the repository's work tree the session measured ("" unknown).
func (id Identity) Repo() string { return id["repo"] }

// Metric is the metric the session decided on ("" for sessions that did
// not name it: tps).
func (id Identity) Metric() string { return id["metric"] }

// FirstParent reports whether a bisection followed first parents only.
func (id Identity) FirstParent() bool { return id["first-parent"] == "true" }

// Search is a start session's search strategy, and whether the identity
// names one: sessions begun before the probabilistic search existed do not
// (they are classic).
func (id Identity) Search() (string, bool) {
	s, ok := id["search"]
	return s, ok
}

// Identity decodes the session's stored identity; empty when it cannot be
// read (a session stored without one).
func (x *Session) Identity() Identity {
	var id Identity
	_ = json.Unmarshal(x.Config, &id)
	if id == nil {
		id = Identity{}
	}
	return id
}
