package bench_test

import (
	"math"
	"regexp"
	"testing"

	"github.com/perfbisect/perfbisect/bench"
)

const draws = 200000

func newRand(randType string) *bench.Rand {
	o := bench.DefaultOptions()
	o.RandType = randType
	return bench.NewRand(o, 12345, 1)
}

// TestSpecialShape checks sysbench 1.0's default distribution with
// --rand-spec-iter=12 --rand-spec-pct=1 --rand-spec-res=75: about three quarters
// of the ids of a 10000-row table fall on the 1% of rows around the middle, the
// rest spread over the whole table.
func TestSpecialShape(t *testing.T) {
	r := newRand("special")
	const n = 10000
	mid, low, high := 0, 0, 0
	for range draws {
		v := r.Default(1, n)
		if v < 1 || v > n {
			t.Fatalf("value %d outside [1, %d]", v, n)
		}
		switch {
		case v >= 4950 && v <= 5050: // the middle 1% (101 ids)
			mid++
		case v < 4000:
			low++
		case v > 6000:
			high++
		}
	}
	frac := float64(mid) / draws
	// 75% special + the gaussian quarter's share of the middle (about 1.2%).
	if frac < 0.74 || frac > 0.78 {
		t.Errorf("%.3f of draws in the middle 1%% of the range, want about 0.76", frac)
	}
	// The gaussian quarter reaches both sides: P(|x-5000| > 1000) = P(|Z| > 1.2) = 0.23.
	for side, c := range map[string]int{"below 4000": low, "above 6000": high} {
		if f := float64(c) / draws; f < 0.02 || f > 0.04 {
			t.Errorf("%.3f of draws %s, want about 0.029 (0.25 x 0.115)", f, side)
		}
	}
}

func TestUniform(t *testing.T) {
	r := newRand("uniform")
	var counts [11]int
	for range draws {
		v := r.Default(1, 10)
		if v < 1 || v > 10 {
			t.Fatalf("value %d outside [1, 10]", v)
		}
		counts[v]++
	}
	for v := 1; v <= 10; v++ {
		if f := float64(counts[v]) / draws; math.Abs(f-0.1) > 0.005 {
			t.Errorf("value %d drawn %.4f of the time, want 0.1", v, f)
		}
	}
}

func TestGaussian(t *testing.T) {
	r := newRand("gaussian")
	var sum, sq float64
	for range draws {
		v := float64(r.Default(1, 10000))
		sum += v
		sq += v * v
	}
	mean := sum / draws
	sd := math.Sqrt(sq/draws - mean*mean)
	// Mean of 12 uniforms over [0, 10000): centre 5000.5, sd 10000/sqrt(144) = 833.
	if math.Abs(mean-5000.5) > 20 {
		t.Errorf("mean %.1f, want about 5000", mean)
	}
	if math.Abs(sd-833.3) > 20 {
		t.Errorf("standard deviation %.1f, want about 833", sd)
	}
}

// TestPareto checks the 80/20 rule of h = 0.2.
func TestPareto(t *testing.T) {
	r := newRand("pareto")
	first := 0
	for range draws {
		v := r.Default(1, 10000)
		if v < 1 || v > 10000 {
			t.Fatalf("value %d outside [1, 10000]", v)
		}
		if v <= 2000 {
			first++
		}
	}
	if f := float64(first) / draws; math.Abs(f-0.8) > 0.01 {
		t.Errorf("%.3f of draws in the first 20%% of the range, want 0.80", f)
	}
}

// TestZipfian compares frequencies with the Zipf law P(k) = k^-0.8 / H(100, 0.8).
func TestZipfian(t *testing.T) {
	r := newRand("zipfian")
	const n = 100
	var counts [n + 1]int
	for range draws {
		v := r.Default(1, n)
		if v < 1 || v > n {
			t.Fatalf("value %d outside [1, %d]", v, n)
		}
		counts[v]++
	}
	h := 0.0
	for k := 1; k <= n; k++ {
		h += math.Pow(float64(k), -0.8)
	}
	for _, k := range []int{1, 2, 5, 20, 100} {
		want := math.Pow(float64(k), -0.8) / h
		got := float64(counts[k]) / draws
		if math.Abs(got-want) > 0.05*want+0.001 {
			t.Errorf("P(%d) = %.4f, want %.4f", k, got, want)
		}
	}
}

// TestRandStreams: a seed and stream fix the sequence; other seeds or streams
// give other sequences.
func TestRandStreams(t *testing.T) {
	o := bench.DefaultOptions()
	seq := func(seed int64, stream uint64) []uint32 {
		r := bench.NewRand(o, seed, stream)
		out := make([]uint32, 64)
		for i := range out {
			out[i] = r.Default(1, 1000000)
		}
		return out
	}
	same := func(a, b []uint32) bool {
		for i := range a {
			if a[i] != b[i] {
				return false
			}
		}
		return true
	}
	if !same(seq(7, 1), seq(7, 1)) {
		t.Error("same seed and stream gave different sequences")
	}
	if same(seq(7, 1), seq(7, 2)) {
		t.Error("streams 1 and 2 of one seed gave the same sequence")
	}
	if same(seq(7, 1), seq(8, 1)) {
		t.Error("seeds 7 and 8 gave the same sequence")
	}
	r := bench.NewRand(o, 7, 1)
	for range 100000 {
		if f := r.Float64(); f < 0 || f >= 1 {
			t.Fatalf("Float64 %v outside [0, 1)", f)
		}
	}
}

func TestRandString(t *testing.T) {
	r := newRand("uniform")
	re := regexp.MustCompile(`^[0-9]{3}-[a-z]{2}x$`)
	digits := map[byte]bool{}
	for range 1000 {
		s := r.String("###-@@x")
		if !re.MatchString(s) {
			t.Fatalf("String(###-@@x) = %q", s)
		}
		digits[s[0]] = true
	}
	if len(digits) != 10 {
		t.Errorf("first character took %d digit values, want all 10", len(digits))
	}
}
