package explain

import (
	"cmp"
	"math"
	"slices"
	"strings"

	"github.com/perfbisect/perfbisect/stats"
)

// WaitChange is one performance_schema wait event's time waited per
// transaction on both sides (microseconds, medians over the runs) and the
// change with its interval (the range of the pairwise differences).
type WaitChange struct {
	Name   string  `json:"name"` // the event (wait/io/file/innodb/innodb_data_file)
	Base   float64 `json:"base_us_per_txn"`
	Head   float64 `json:"head_us_per_txn"`
	Change float64 `json:"change_us"`
	Lo     float64 `json:"change_lo_us"`
	Hi     float64 `json:"change_hi_us"`
}

// hasWaits says whether every run has performance_schema's wait summary.
func hasWaits(rs []Run) bool {
	for _, r := range rs {
		found := false
		for k := range r.Status {
			if found = strings.HasPrefix(k, WaitPrefix); found {
				break
			}
		}
		if !found {
			return false
		}
	}
	return len(rs) > 0
}

// waits are the wait events whose time per transaction changed beyond the
// runs' spread by a microsecond or more, the largest change first.
func waits(base, head []Run, top int) []WaitChange {
	per := func(rs []Run, key string) []float64 { // picoseconds to µs a transaction
		us := statusPerTxn(rs, key)
		for i := range us {
			us[i] /= 1e6
		}
		return us
	}
	names := map[string]bool{}
	for _, r := range append(slices.Clone(base), head...) {
		for k := range r.Status {
			if strings.HasPrefix(k, WaitPrefix) {
				names[k] = true
			}
		}
	}
	var out []WaitChange
	for key := range names {
		bv, hv := per(base, key), per(head, key)
		if slices.ContainsFunc(bv, neg) || slices.ContainsFunc(hv, neg) {
			continue // the summary was reset during a run
		}
		w := WaitChange{Name: strings.TrimPrefix(key, WaitPrefix), Base: stats.Median(bv), Head: stats.Median(hv)}
		w.Change = w.Head - w.Base
		w.Lo, w.Hi = PairRange(bv, hv)
		if w.Lo <= 0 && w.Hi >= 0 || math.Abs(w.Change) < 1 {
			continue
		}
		out = append(out, w)
	}
	slices.SortFunc(out, func(a, b WaitChange) int {
		if c := cmp.Compare(math.Abs(b.Change), math.Abs(a.Change)); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	return out[:min(len(out), top)]
}
