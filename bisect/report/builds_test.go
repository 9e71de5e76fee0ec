package report

import (
	"testing"

	"github.com/perfbisect/perfbisect/bisect/store"
)

// TestBuildCount: installs found in the build cache (a resumed session's
// endpoints) are not counted as builds, nor is their time; failures are.
func TestBuildCount(t *testing.T) {
	builds := []store.Build{
		{Commit: "a", Seconds: 600},
		{Commit: "b", Seconds: 300, Error: "error: x"},
		{Commit: "a", Seconds: 0.01, Cached: true},
		{Commit: "c", Seconds: 0.02, Cached: true},
	}
	if got, want := buildCount(builds, true), "2 (1 failed, 900s in all), 2 from the build cache"; got != want {
		t.Errorf("buildCount = %q, want %q", got, want)
	}
	if got, want := buildCount(builds[:2], false), "2 (1 failed)"; got != want {
		t.Errorf("buildCount without cache hits = %q, want %q", got, want)
	}
	facts := []BuildFact{{Commit: "a", Seconds: 0.01, Cached: true, Flavor: "MariaDB", Version: "10.0.22"}}
	if got, want := buildsText(facts), "none built, 1 from the build cache, tree MariaDB 10.0.22"; got != want {
		t.Errorf("buildsText = %q, want %q", got, want)
	}
}
