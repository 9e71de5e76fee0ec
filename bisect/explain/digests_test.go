package explain

import (
	"testing"
	"time"

	"github.com/perfbisect/perfbisect/serverctl"
)

// TestDigestTimes: a run's statements are the digests' differences over
// the window: one that did not run in it is left out, one first seen in it
// counts whole, the schema tells two digests of one text apart, one run
// without a database (perfbisect's own readings) is left out, the
// server's picoseconds become a duration, the dearest first.
func TestDigestTimes(t *testing.T) {
	before := []serverctl.Digest{
		{Schema: "sbtest", Digest: "aaaa1111bbbb", Text: "SELECT c FROM sbtest1 WHERE id = ?", Count: 100, Time: 5e9},
		{Schema: "sbtest", Digest: "cccc", Text: "BEGIN", Count: 40, Time: 1e9},
		{Schema: "other", Digest: "aaaa1111bbbb", Text: "SELECT c FROM sbtest1 WHERE id = ?", Count: 7, Time: 1e9},
	}
	after := []serverctl.Digest{
		{Schema: "sbtest", Digest: "aaaa1111bbbb", Text: "SELECT c FROM sbtest1 WHERE id = ?", Count: 300, Time: 15e9, Sample: "SELECT c FROM sbtest1 WHERE id = 42"},
		{Schema: "sbtest", Digest: "cccc", Text: "BEGIN", Count: 40, Time: 1e9},
		{Schema: "other", Digest: "aaaa1111bbbb", Text: "SELECT c FROM sbtest1 WHERE id = ?", Count: 7, Time: 1e9},
		{Schema: "sbtest", Digest: "dddd", Text: "SELECT SUM(k) FROM sbtest1 WHERE id BETWEEN ? AND ?", Count: 20, Time: 30e9},
		{Schema: "sbtest", Digest: "eeee", Text: "", Count: 5, Time: 1e9},
		{Schema: "", Digest: "ffff", Text: "SHOW GLOBAL STATUS", Count: 2, Time: 90e9}, // the probe's
	}
	got := digestTimes(before, after)
	if len(got) != 2 {
		t.Fatalf("%d statements %+v, want the two that ran in the window with a text", len(got), got)
	}
	if got[0].Digest != "dddd" || got[0].Schema != "sbtest" || got[0].Count != 20 || got[0].Time != 30*time.Millisecond {
		t.Errorf("first %+v: want the sum, new in the window, 20 runs in 30ms", got[0])
	}
	if p := got[1]; p.Name != "digest aaaa1111" || p.Count != 200 || p.Time != 10*time.Millisecond || p.Sample != "SELECT c FROM sbtest1 WHERE id = 42" {
		t.Errorf("second %+v: want the point select's 200 runs in 10ms since the window opened, with its sample", p)
	}
}
