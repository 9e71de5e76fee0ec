package report

import (
	"fmt"
	"sort"
	"strings"

	"github.com/perfbisect/perfbisect/bisect"
)

// DisturbedDoc counts what the machine did to a session's runs: the runs
// measured again and not counted, and the runs that count although
// disturbed (their re-measurements ran out), each by kind of disturbance
// (bisect.FactDiscardedKinds).
type DisturbedDoc struct {
	MeasuredAgain int            `json:"measured_again"`
	AgainByKind   map[string]int `json:"again_by_kind,omitempty"`
	Counted       int            `json:"counted_disturbed"`
	CountedByKind map[string]int `json:"counted_by_kind,omitempty"`
}

// disturbedOf counts the disturbances the facts of runs name; nil when
// there were none.
func disturbedOf(runs []bisect.Run) *DisturbedDoc {
	d := &DisturbedDoc{AgainByKind: map[string]int{}, CountedByKind: map[string]int{}}
	for _, r := range runs {
		if ds := r.Facts["discarded_runs"]; ds != "" {
			d.MeasuredAgain += strings.Count(ds, " tps (")
			for _, k := range strings.Split(r.Facts[bisect.FactDiscardedKinds], ",") {
				if k != "" {
					d.AgainByKind[k]++
				}
			}
		}
		if r.Facts["disturbed"] != "" {
			d.Counted++
			for _, k := range strings.Split(r.Facts[bisect.FactDisturbedKinds], ",") {
				if k != "" {
					d.CountedByKind[k]++
				}
			}
		}
	}
	if d.MeasuredAgain == 0 && d.Counted == 0 {
		return nil
	}
	return d
}

// String is the count in a line: "5 run(s) measured again, not counted
// (throttled 3, other processes 2); 1 run(s) counted although disturbed,
// their re-measurements spent (descheduled 1)"; "" for nil.
func (d *DisturbedDoc) String() string {
	if d == nil {
		return ""
	}
	var parts []string
	if d.MeasuredAgain > 0 {
		parts = append(parts, fmt.Sprintf("%d run(s) measured again, not counted%s", d.MeasuredAgain, byKind(d.AgainByKind)))
	}
	if d.Counted > 0 {
		parts = append(parts, fmt.Sprintf("%d run(s) counted although disturbed, their re-measurements spent%s", d.Counted, byKind(d.CountedByKind)))
	}
	return strings.Join(parts, "; ")
}

// byKind is " (kind n, kind n)" by count, then name; "" when empty.
func byKind(m map[string]int) string {
	if len(m) == 0 {
		return ""
	}
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool {
		if m[ks[i]] != m[ks[j]] {
			return m[ks[i]] > m[ks[j]]
		}
		return ks[i] < ks[j]
	})
	for i, k := range ks {
		ks[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return " (" + strings.Join(ks, ", ") + ")"
}
