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

// The identity's keys: every key a perfbisect writes is declared here, with
// what it holds. The names (and the values' forms) are stored and hashed
// into Key: renaming one, or changing how a value is written, makes every
// stored session under it unresumable.
const (
	KeyGood       = "good"        // the good endpoint (start, run, scan: a commit; compare: the base side's key)
	KeyBad        = "bad"         // the bad endpoint (compare: the head side's key)
	KeyRepeats    = "repeats"     // runs a revision gets at the first look
	KeyMaxRepeats = "max-repeats" // runs a revision may get at most
	KeyThreshold  = "threshold"   // the smallest change that counts, a fraction
	KeyConfidence = "confidence"  // the decisions' confidence, a fraction
	KeyMetric     = "metric"      // the metric decided on (bisect.Metric's name)
	KeyFind       = "find"        // "regression" or "improvement"
	KeyRecipe     = "recipe"      // the build recipe's hash (build.Recipe.Hash)
	// KeyMyCnf is the option file's path; KeyMyCnfContent the digest of its
	// content and of every file it includes (serverctl.OptionFile.ShortDigest).
	KeyMyCnf        = "my-cnf"
	KeyMyCnfContent = "my-cnf content"
	// KeyWorkload is the workload's settings as one value; each setting is
	// also keyed as "workload NAME" (bench.IdentityOf writes both).
	KeyWorkload     = "workload"
	KeyFreshDatadir = "fresh-datadir" // "true" when every run starts from a fresh datadir (absent otherwise)
	KeyLayouts      = "layouts"       // code layouts: "run", or per build from 2 (absent for the build's own)
	KeyServerCPUs   = "server-cpus"   // the server's CPU list when pinned (absent otherwise)
	KeyClientCPUs   = "client-cpus"   // the client's CPU list when pinned (absent otherwise)
	KeyRepo         = "repo"          // the repository's work tree
	KeyCommand      = "command"       // "compare" or "scan" (start and run sessions have none)
	// KeyBaseSide and KeyHeadSide describe a compared side that is not a
	// plain revision of the repository (another tree, an installed server,
	// its own option file); absent for plain ones.
	KeyBaseSide = "base side"
	KeyHeadSide = "head side"
	// A scan's step, whether it tests merges, and its runs per commit.
	KeyEvery  = "every"
	KeyMerges = "merges"
	KeyRuns   = "runs"
	// A start session's search: whether it confirms against the parent,
	// follows first parents, runs K builds at once; the search strategy
	// and its run budget (both absent for the classic search, as sessions
	// begun before the probabilistic search existed stored them); and what
	// it did with documentation-only commits ("kept", "left out"; absent in
	// sessions begun before they were left out).
	KeyNoConfirm   = "no-confirm"
	KeyFirstParent = "first-parent"
	KeyJobs        = "jobs"
	KeySearch      = "search"
	KeyMaxRuns     = "max-runs"
	KeyDocCommits  = "doc-commits"
	// KeyBinaries is the first phase of a start with --binaries: the
	// tarballs' directory and the names of those its releases are measured
	// from. KeyNarrowedFrom, in the second phase's identity, is the first
	// phase's key (Identity.Key).
	KeyBinaries     = "binaries"
	KeyNarrowedFrom = "narrowed from"
	// KeyRunners are the runner hosts a session's runs are taken on, as
	// given, space-separated (absent: this machine).
	KeyRunners = "runners"
)

// SameMeasurement are the keys two sessions' runs of one commit must agree
// on to be measurements of the same thing (Store.EarlierRuns).
var SameMeasurement = []string{KeyWorkload, KeyRecipe, KeyMyCnfContent, KeyRunners}

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
		if _, ok := id[k]; !ok && k != KeyWorkload {
			diffs = append(diffs, fmt.Sprintf("%s %q -> \"\"", k, o))
		}
	}
	for k, v := range id {
		if k == KeyWorkload {
			continue // its fields are compared one by one
		}
		if o, ok := old[k]; !ok || o != v {
			if k == KeyMyCnfContent {
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
func (id Identity) LeavesOutDocCommits() bool { return id[KeyDocCommits] == "left out" }

// HasDocCommits reports whether the identity says what a bisection did with
// the commits that change only documentation, tests or CI files (sessions
// begun before they were left out do not: they tested them).
func (id Identity) HasDocCommits() bool {
	_, ok := id[KeyDocCommits]
	return ok
}

// Repo is the repository's work tree the session measured ("" unknown).
func (id Identity) Repo() string { return id[KeyRepo] }

// Metric is the metric the session decided on ("" for sessions that did
// not name it: tps).
func (id Identity) Metric() string { return id[KeyMetric] }

// FirstParent reports whether a bisection followed first parents only.
func (id Identity) FirstParent() bool { return id[KeyFirstParent] == "true" }

// Search is a start session's search strategy, and whether the identity
// names one: sessions begun before the probabilistic search existed do not
// (they are classic).
func (id Identity) Search() (string, bool) {
	s, ok := id[KeySearch]
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
