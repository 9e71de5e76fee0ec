package store

import "testing"

// Diff names each changed setting once, the workload by its fields, the
// option file's content in words and long values without their text.
func TestIdentityDiff(t *testing.T) {
	old := Identity{"threshold": "0.05", "workload": `{"threads":2}`, "workload threads": "2", "my-cnf content": "aaaa", "recipe": "r1"}
	now := Identity{"threshold": "0.07", "workload": `{"threads":4}`, "workload threads": "4", "my-cnf content": "bbbb", "recipe": "r1",
		"search": "bayes", "long": string(make([]byte, 61))}
	want := `long changed, search "" -> "bayes", the option file's content (or a file it includes), threshold "0.05" -> "0.07", workload threads "2" -> "4"`
	if got := now.Diff(old); got != want {
		t.Errorf("Diff:\n got %s\nwant %s", got, want)
	}
	// A setting only the stored session has is named too.
	if got, want := (Identity{"recipe": "r1"}).Diff(Identity{"recipe": "r1", "doc-commits": "left out"}), `doc-commits "left out" -> ""`; got != want {
		t.Errorf("Diff of a setting gone: %q, want %q", got, want)
	}
	if got := old.Diff(old); got != "" {
		t.Errorf("an identity differs from itself: %s", got)
	}
	if now.Key() == old.Key() || old.Key() != (Identity{"recipe": "r1", "threshold": "0.05", "workload": `{"threads":2}`, "workload threads": "2", "my-cnf content": "aaaa"}).Key() {
		t.Errorf("Key depends on something other than the names and values")
	}
}
