package bench

import (
	"math"
	"testing"
)

// These tests sit inside the package: 0.4.12's id functions are not part of the
// API, only of the oltp_legacy workload.

const legacyDraws = 400000

func legacyRand(t *testing.T, change func(o *Options)) (*Rand, legacyDist) {
	t.Helper()
	o := DefaultOptions()
	o.Workload = "oltp_legacy"
	if change != nil {
		change(&o)
	}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	return NewRand(o, 4242, streamThread), newLegacyDist(&o)
}

// normalCDF is P(Z <= x) for a standard normal Z.
func normalCDF(x float64) float64 { return 0.5 * (1 + math.Erf(x/math.Sqrt2)) }

// gaussianShare is the probability that rnd_func_gaussian (the truncated mean
// of iter uniform ids over [1, size]) lands in [lo, hi], by the normal
// approximation: mean (size+1)/2, variance (size^2-1)/12/iter.
func gaussianShare(size, iter, lo, hi float64) float64 {
	mean := (size + 1) / 2
	sd := math.Sqrt((size*size - 1) / 12 / iter)
	return normalCDF((hi+1-mean)/sd) - normalCDF((lo-mean)/sd)
}

// TestLegacySpecialShape checks rnd_func_special against its definition in
// sb_oltp.c: a draw is special with probability 1 - 1/(100/(100-res)), the
// quotient rounded down, and then uniform over the d = size*pct/100 ids from
// size/2 - size*pct/200; otherwise it is rnd_func_gaussian. So the share of
// draws on those ids is that probability plus the gaussian's share of them.
// --oltp-dist-res=70 shows the rounding: 100/30 = 3, two thirds special, not 70%.
func TestLegacySpecialShape(t *testing.T) {
	cases := []struct {
		name          string
		size          int
		pct, res      int
		hotLo, hotHi  uint32  // the special ids
		special       float64 // share of special draws
		tolerance     float64
		wantNotNearby float64 // a share the hot fraction must not be near (0: none)
	}{
		{"defaults 1% in 75% of draws", 10000, 1, 75, 4950, 5049, 0.75, 0.004, 0},
		{"res 70 is two thirds", 10000, 1, 70, 4950, 5049, 2.0 / 3, 0.004, 0.70 + 0.30*0.0479},
		{"pct 10 res 90", 10000, 10, 90, 4500, 5499, 0.90, 0.004, 0},
		{"res 0 is all gaussian", 10000, 1, 0, 4950, 5049, 0, 0.003, 0},
		{"tiny table: one special id", 50, 1, 75, 25, 25, 0.75, 0.004, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, d := legacyRand(t, func(o *Options) {
				o.TableSize, o.RandSpecPct, o.RandSpecRes = c.size, c.pct, c.res
			})
			if d.hotStart() != c.hotLo || d.hotStart()+d.hotSize()-1 != c.hotHi {
				t.Fatalf("special ids [%d, %d], want [%d, %d]", d.hotStart(), d.hotStart()+d.hotSize()-1, c.hotLo, c.hotHi)
			}
			hot := 0
			var sum float64
			for range legacyDraws {
				v := d.id(r)
				if v < 1 || v > uint32(c.size) {
					t.Fatalf("id %d outside [1, %d]", v, c.size)
				}
				if v >= c.hotLo && v <= c.hotHi {
					hot++
				}
				sum += float64(v)
			}
			got := float64(hot) / legacyDraws
			want := c.special + (1-c.special)*gaussianShare(float64(c.size), 12, float64(c.hotLo), float64(c.hotHi))
			if math.Abs(got-want) > c.tolerance {
				t.Errorf("%.4f of draws on ids [%d, %d], want %.4f (%.3f special + the gaussian's share)", got, c.hotLo, c.hotHi, want, c.special)
			}
			if c.wantNotNearby != 0 && math.Abs(got-c.wantNotNearby) < 0.02 {
				t.Errorf("%.4f of draws on the special ids: res %d%% taken literally, not as 1 - 1/(100/(100-res))", got, c.res)
			}
			// Both parts are centred: the mean id is the middle of the table
			// (size/2: both round down).
			if mean := sum / legacyDraws; math.Abs(mean-float64(c.size)/2) > max(float64(c.size)/200, 0.5) {
				t.Errorf("mean id %.1f, want about %.1f", mean, float64(c.size)/2)
			}
		})
	}
}

// TestLegacySpecialVersusGaussian: outside the special ids the special
// distribution is rnd_func_gaussian, scaled by the non-special share.
func TestLegacySpecialVersusGaussian(t *testing.T) {
	r, d := legacyRand(t, nil)
	below := 0 // ids more than one sd (833) under the middle
	for range legacyDraws {
		if d.id(r) < 5000-833 {
			below++
		}
	}
	want := 0.25 * normalCDF(-1)
	if got := float64(below) / legacyDraws; math.Abs(got-want) > 0.003 {
		t.Errorf("%.4f of draws below id 4167, want %.4f (a quarter of the gaussian's 15.9%%)", got, want)
	}
}

func TestLegacyUniformAndGaussian(t *testing.T) {
	r, d := legacyRand(t, func(o *Options) { o.RandType = "uniform"; o.TableSize = 10 })
	var counts [11]int
	for range legacyDraws {
		v := d.id(r)
		if v < 1 || v > 10 {
			t.Fatalf("uniform id %d outside [1, 10]", v)
		}
		counts[v]++
	}
	for v := 1; v <= 10; v++ {
		if f := float64(counts[v]) / legacyDraws; math.Abs(f-0.1) > 0.004 {
			t.Errorf("uniform id %d drawn %.4f of the time, want 0.1", v, f)
		}
	}

	r, d = legacyRand(t, func(o *Options) { o.RandType = "gaussian"; o.RandSpecIter = 3 })
	var sum, sq float64
	for range legacyDraws {
		v := float64(d.id(r))
		sum += v
		sq += v * v
	}
	mean := sum / legacyDraws
	sd := math.Sqrt(sq/legacyDraws - mean*mean)
	// Truncated mean of 3 uniform ids in [1, 10000]: mean about 5000, sd 10000/sqrt(36).
	if math.Abs(mean-5000) > 20 || math.Abs(sd-1666.7) > 20 {
		t.Errorf("gaussian over 3 iterations: mean %.1f sd %.1f, want about 5000 and 1667", mean, sd)
	}
}

// TestSbRnd: sb_rnd() is below SB_MAX_RND and reaches the top of its range.
func TestSbRnd(t *testing.T) {
	r, _ := legacyRand(t, nil)
	var top uint32
	for range legacyDraws {
		v := r.sbRnd()
		if v >= sbRndMax {
			t.Fatalf("sb_rnd() = %#x, want < %#x", v, sbRndMax)
		}
		top = max(top, v)
	}
	if top < sbRndMax-sbRndMax/1000 {
		t.Errorf("largest of %d draws is %#x, want close to %#x", legacyDraws, top, sbRndMax)
	}
}

// TestLegacyRangeStart: ranges are pulled back to end inside the table, and
// wrap around when larger than the table, as get_request_complex's unsigned
// arithmetic does.
func TestLegacyRangeStart(t *testing.T) {
	r, d := legacyRand(t, func(o *Options) { o.RandType = "uniform"; o.TableSize = 1000 })
	lg := &legacyThread{dist: d}
	for range 10000 {
		from := lg.rangeStart(r, 100)
		if from < 1 || from+100 > 1000 {
			t.Fatalf("range [%d, %d] of 100 ids in a 1000-row table", from, from+99)
		}
	}
	from := lg.rangeStart(r, 1500)
	if int32(from) != 1000-1500 {
		t.Errorf("range of 1500 in 1000 rows starts at %d (as INT %d), want 1000-1500", from, int32(from))
	}
}
