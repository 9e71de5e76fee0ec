package stats

import (
	"fmt"
	"math"
)

// Block is one run each of the good revision, the bad revision and the candidate,
// measured back to back (in rotating order), in one metric where higher is better
// (tps; negate or invert a lower-is-better metric before calling).
type Block struct {
	Good, Bad, Cand float64
}

// Side is where a candidate sits between good and bad.
type Side int

// Sides of Classify.
const (
	Undecided Side = iota // measure more; at the repeat limit: skip
	GoodSide              // above the midpoint: behaves like good
	BadSide               // below the midpoint: behaves like bad
)

func (s Side) String() string {
	switch s {
	case GoodSide:
		return "good"
	case BadSide:
		return "bad"
	default:
		return "undecided"
	}
}

// Classification is the evidence for where a candidate sits.
type Classification struct {
	N                     int     // blocks
	MedianGood, MedianBad float64 // medians of the reference runs in the blocks
	MedianCand, MedianMid float64 // candidate runs; per-block midpoints (good+bad)/2
	Position              float64 // (cand - bad) / (good - bad) on medians: 1 = like good, 0 = like bad; 0 when good and bad medians are equal
	// PositionCI is Fieller's interval of the position (on block means,
	// Position in fieller.go) at 1-Alpha; not OK when good and bad do not
	// differ significantly in these blocks.
	PositionCI Interval
	P          float64 // two-sided Mann-Whitney p of candidate runs vs per-block midpoints
	Alpha      float64
	Side       Side
	// Between is set when the candidate is undecided because it sits between
	// good and bad: its whole position interval lies inside (0.2, 0.8), so
	// more runs would not make it like either end (a gradual change, two
	// culprits). The caller stops measuring it.
	Between          bool
	Rule, Need, Note string
}

// Between's band: a candidate whose position interval lies inside it is
// neither like good nor like bad.
const betweenLo, betweenHi = 0.2, 0.8

// Classify places a candidate against the midpoint between good and bad. Each
// block contributes one candidate run and one midpoint value (good+bad)/2 from
// the runs measured alongside it, so a machine that drifts moves both alike. The
// candidate's runs are tested against the midpoints with the two-sided
// Mann-Whitney U test at alpha; a significant result puts the candidate on the
// side of the midpoint its median lies on. Because the candidate is compared
// with the midpoint, the effect to detect is half the good-bad shift. A
// candidate on one side that still differs significantly from that side's end
// (a partial change: two culprits, a gradual slide) is noted, not forced.
func Classify(blocks []Block, alpha float64) Classification {
	n := len(blocks)
	c := Classification{N: n, Alpha: alpha, P: 1}
	if n == 0 {
		c.Need = "no blocks measured"
		return c
	}
	g, b, x, m := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	for i, bl := range blocks {
		g[i], b[i], x[i], m[i] = bl.Good, bl.Bad, bl.Cand, (bl.Good+bl.Bad)/2
	}
	c.MedianGood, c.MedianBad, c.MedianCand, c.MedianMid = Median(g), Median(b), Median(x), Median(m)
	if c.MedianGood != c.MedianBad {
		c.Position = (c.MedianCand - c.MedianBad) / (c.MedianGood - c.MedianBad)
	}
	if n >= 2 {
		if pe := Position(g, b, x, 1-alpha); pe.Bounded && !math.IsInf(pe.Lo, 0) && !math.IsInf(pe.Hi, 0) {
			c.PositionCI = Interval{Lo: pe.Lo, Hi: pe.Hi, OK: true}
		}
	}
	c.P, _ = MannWhitney(x, m)
	if c.P > alpha {
		c.Side = Undecided
		c.Rule = fmt.Sprintf("candidate vs midpoint p=%.2g > alpha=%.2g", c.P, alpha)
		if ci := c.PositionCI; ci.OK && ci.Lo > betweenLo && ci.Hi < betweenHi {
			c.Between = true
			c.Rule = fmt.Sprintf("the candidate sits between good and bad: position %s, %.4g%% interval [%.2f, %.2f] inside (%.1f, %.1f); candidate vs midpoint p=%.2g",
				position(c.Position), 100*(1-alpha), ci.Lo, ci.Hi, betweenLo, betweenHi, c.P)
			c.Need = "nothing: more runs would not make it like either end (a gradual change, or two culprits: bisect each part separately with the candidate as an endpoint)"
			return c
		}
		if mp := MinP(n, n); mp > alpha {
			c.Need = fmt.Sprintf("%d blocks cannot reach p <= %.2g (best possible %.2g): need >= %d blocks", n, alpha, mp, RunsNeeded(alpha))
		} else {
			c.Need = fmt.Sprintf("candidate median %.4g is too close to the midpoint %.4g for %d blocks: more blocks needed", c.MedianCand, c.MedianMid, n)
		}
		return c
	}
	upper := c.MedianGood > c.MedianBad // good is the higher end
	above := c.MedianCand > c.MedianMid
	if above == upper {
		c.Side = GoodSide
	} else {
		c.Side = BadSide
	}
	c.Rule = fmt.Sprintf("candidate vs midpoint p=%.2g <= alpha=%.2g, position %s (1 = good, 0 = bad)", c.P, alpha, position(c.Position))
	if ci := c.PositionCI; ci.OK {
		c.Rule += fmt.Sprintf(", %.4g%% interval [%.2f, %.2f]", 100*(1-alpha), ci.Lo, ci.Hi)
	}
	end := g
	if c.Side == BadSide {
		end = b
	}
	if p, _ := MannWhitney(x, end); p <= alpha {
		c.Note = fmt.Sprintf("candidate differs from the %s end too (p=%.2g, position %s): a partial change (a second culprit or a gradual slide?)", c.Side, p, position(c.Position))
	}
	return c
}

// position formats a position with two decimals, without "-0.00".
func position(x float64) string {
	if math.Abs(x) < 0.005 {
		x = 0
	}
	return fmt.Sprintf("%.2f", x)
}
