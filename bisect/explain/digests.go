package explain

import (
	"cmp"
	"context"
	"path/filepath"
	"slices"
	"time"

	"github.com/perfbisect/perfbisect/bench"
	"github.com/perfbisect/perfbisect/bench/dial"
	"github.com/perfbisect/perfbisect/bisect/measure"
	"github.com/perfbisect/perfbisect/serverctl"
)

// digestKey names a digest across a run's two readings.
func digestKey(d serverctl.Digest) string { return d.Schema + "\x00" + d.Digest }

// digestTimes are the statements of performance_schema's digests that ran
// between the readings before and after (the counts' and times'
// differences) in a database (the workload's; the probe's own statements
// use none), as the workload's statement times with the server's time
// (bench.StatementTime.Digest set), by schema, the dearest first in each.
func digestTimes(before, after []serverctl.Digest) []bench.StatementTime {
	was := map[string]serverctl.Digest{}
	for _, d := range before {
		was[digestKey(d)] = d
	}
	var out []bench.StatementTime
	for _, d := range after {
		b := was[digestKey(d)]
		n, ps := d.Count-b.Count, d.Time-b.Time
		if n <= 0 || d.Text == "" || d.Schema == "" {
			continue // perfbisect's own readings run without a default database; a workload's never
		}
		out = append(out, bench.StatementTime{Name: "digest " + d.Digest[:min(8, len(d.Digest))], SQL: d.Text, Count: n,
			Time: time.Duration(ps / 1000), Sample: d.Sample, Digest: d.Digest, Schema: d.Schema})
	}
	slices.SortFunc(out, func(x, y bench.StatementTime) int {
		return cmp.Or(cmp.Compare(x.Schema, y.Schema), cmp.Compare(y.Time, x.Time), cmp.Compare(x.SQL, y.SQL))
	})
	return out
}

// writeDigests writes the window's digests (digestTimes) into dir as the
// run's statement times, each sample EXPLAINed in its own schema. Nothing
// is written when no digest ran (performance_schema off, or every
// statement a prepared one) or the digests cannot be read or written: the
// run has no statement times then, and the rest of its explanation stands.
func writeDigests(ctx context.Context, srv *serverctl.Server, dir string, before []serverctl.Digest) {
	after, err := srv.StatementDigests(ctx, true)
	if err != nil {
		return
	}
	sts := digestTimes(before, after)
	if len(sts) == 0 {
		return
	}
	// Each schema's statements are EXPLAINed over a connection in it.
	for rest := sts; len(rest) > 0; {
		n := 1
		for n < len(rest) && rest[n].Schema == rest[0].Schema {
			n++
		}
		conn, _, err := dial.Connector(srv.DSN(rest[0].Schema), nil)
		if err != nil {
			return
		}
		bench.ExplainSamples(ctx, conn, rest[:n])
		rest = rest[n:]
	}
	_ = writeJSON(filepath.Join(dir, measure.StatementsFile), sts)
}
