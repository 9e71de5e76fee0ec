package app

import (
	"fmt"
	"regexp"
	"runtime/debug"
)

// releaseTag is a module version that is a release (v0.2.0), not a
// pseudo-version such as v0.0.0-20261202081010-abcdef123456+dirty.
var releaseTag = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+$`)

// Version is what --version prints: the release, and the commit, commit
// time and "modified" (uncommitted changes) from the build's VCS stamp when
// the binary was built from a git checkout ("0.1.0 (commit 4cb62f0a1b2c,
// 2026-12-02T08:10:00Z)").
func Version(release string) string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return release
	}
	var rev, at string
	modified := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	rel := release
	if mv := info.Main.Version; releaseTag.MatchString(mv) {
		rel = mv[1:] // go install ...@v0.2.0 (not a pseudo-version of a checkout)
	}
	if rev == "" {
		return rel + " (commit unknown: built without version control information, -buildvcs=false)"
	}
	v := fmt.Sprintf("%s (commit %.12s", rel, rev)
	if at != "" {
		v += ", " + at
	}
	if modified {
		v += ", modified"
	}
	return v + ")"
}
