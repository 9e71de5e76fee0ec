package stats

import (
	"math"
	"math/big"
	"math/rand/v2"
	"sort"
	"testing"

	"gonum.org/v1/gonum/stat"
)

// choose is C(n, k) as a float64 (exact for the sizes used here).
func choose(n, k int) float64 {
	f, _ := new(big.Float).SetInt(new(big.Int).Binomial(int64(n), int64(k))).Float64()
	return f
}

func TestKolmogorovSmirnovCompleteSeparation(t *testing.T) {
	// With every x below every y, D = 1, and only the two lattice paths "all x
	// first" and "all y first" reach it: p = 2/C(n+m, n) (derived; the same
	// count as the Mann-Whitney minimum p).
	for _, c := range [][2]int{{1, 1}, {3, 3}, {4, 5}, {5, 5}, {2, 10}, {10, 12}, {20, 20}} {
		n, m := c[0], c[1]
		x, y := make([]float64, n), make([]float64, m)
		for i := range x {
			x[i] = float64(i)
		}
		for j := range y {
			y[j] = float64(100 + j)
		}
		d, p, err := KolmogorovSmirnov(y, x) // order of arguments does not matter
		if err != nil {
			t.Fatal(err)
		}
		want := math.Min(1, 2/choose(n+m, n))
		if d != 1 || math.Abs(p-want) > 1e-12*want {
			t.Errorf("%d vs %d separated: d=%v p=%v, want 1 and %v", n, m, d, p, want)
		}
	}
}

func TestKolmogorovSmirnovEqualSizesClosedForm(t *testing.T) {
	// For n = m the exact null distribution has a closed form (Gnedenko &
	// Korolyuk 1951): P(D >= k/n) = 2 * sum_{j>=1} (-1)^(j+1) C(2n, n-jk) / C(2n, n).
	// x = 1..n and y_i = i + k - 0.5 give D = k/n.
	gk := func(n, k int) float64 {
		s := 0.0
		for j := 1; n-j*k >= 0; j++ {
			s += math.Pow(-1, float64(j+1)) * choose(2*n, n-j*k)
		}
		return math.Min(1, 2*s/choose(2*n, n))
	}
	for _, n := range []int{5, 10, 17, 40} {
		for k := 1; k <= n; k++ {
			x, y := make([]float64, n), make([]float64, n)
			for i := range x {
				x[i] = float64(i + 1)
				y[i] = float64(i+1+k) - 0.5
			}
			d, p, err := KolmogorovSmirnov(x, y)
			if err != nil {
				t.Fatal(err)
			}
			want := gk(n, k)
			if math.Abs(d-float64(k)/float64(n)) > 1e-15 || math.Abs(p-want) > 1e-10*want+1e-15 {
				t.Errorf("n=m=%d, D=%d/%d: got d=%v p=%.12g, want p=%.12g", n, k, n, d, p, want)
			}
		}
	}
	// Two values of the closed form by hand, n = m = 10: P(D >= 0.6) =
	// 2*C(20,4)/C(20,10) = 9690/184756 and P(D >= 0.7) = 2*C(20,3)/C(20,10) =
	// 2280/184756 (so 0.7 is the smallest D significant at 5% for n = m = 10).
	if math.Abs(gk(10, 6)-9690.0/184756) > 1e-15 || math.Abs(gk(10, 7)-2280.0/184756) > 1e-15 {
		t.Errorf("closed form: %v %v", gk(10, 6), gk(10, 7))
	}
}

// enumerateKS is the exact permutation p-value by brute force: every split of the
// pooled sample into groups of len(x) and len(y), D of each by gonum's
// stat.KolmogorovSmirnov (an independent implementation of the statistic).
func enumerateKS(x, y []float64) (d, p float64) {
	ksd := func(a, b []float64) float64 {
		a = append([]float64(nil), a...)
		b = append([]float64(nil), b...)
		sort.Float64s(a)
		sort.Float64s(b)
		return stat.KolmogorovSmirnov(a, nil, b, nil)
	}
	d = ksd(x, y)
	pool := append(append([]float64(nil), x...), y...)
	n, N := len(x), len(pool)
	var hits, total int
	for mask := 0; mask < 1<<N; mask++ {
		if popcount(mask) != n {
			continue
		}
		var a, b []float64
		for i, v := range pool {
			if mask&(1<<i) != 0 {
				a = append(a, v)
			} else {
				b = append(b, v)
			}
		}
		total++
		if ksd(a, b) >= d-1e-9 {
			hits++
		}
	}
	return d, float64(hits) / float64(total)
}

func popcount(v int) int {
	c := 0
	for ; v != 0; v &= v - 1 {
		c++
	}
	return c
}

func TestKolmogorovSmirnovMatchesEnumeration(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	cases := []struct {
		name string
		x, y []float64
	}{
		{"4 vs 5 no ties", []float64{1.1, 3.4, 2.2, 5.0}, []float64{2.5, 4.1, 6.3, 0.7, 5.5}},
		{"4 vs 5 shifted", []float64{1, 2, 3, 4.5}, []float64{3.5, 5, 6, 7, 8}},
		{"4 vs 5 ties across", []float64{1, 2, 2, 3}, []float64{2, 3, 3, 4, 5}},
		{"6 vs 7 heavy ties", []float64{1, 1, 2, 2, 2, 3}, []float64{2, 3, 3, 3, 1, 3, 2}},
		{"3 vs 8", []float64{10, 11, 12}, []float64{1, 2, 3, 4, 10.5, 13, 14, 15}},
		{"5 vs 5 all equal", []float64{4, 4, 4, 4, 4}, []float64{4, 4, 4, 4, 4}},
	}
	for i := 0; i < 5; i++ { // random 6 vs 8 with values on a coarse grid (ties)
		x, y := make([]float64, 6), make([]float64, 8)
		for k := range x {
			x[k] = math.Round(r.NormFloat64() * 2)
		}
		for k := range y {
			y[k] = math.Round(r.NormFloat64()*2 + 1)
		}
		cases = append(cases, struct {
			name string
			x, y []float64
		}{"random 6 vs 8 on a grid", x, y})
	}
	for _, c := range cases {
		wd, wp := enumerateKS(c.x, c.y)
		d, p, err := KolmogorovSmirnov(c.x, c.y)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(d-wd) > 1e-12 || math.Abs(p-wp) > 1e-12 {
			t.Errorf("%s %v %v: d=%v p=%.15g, enumeration d=%v p=%.15g", c.name, c.x, c.y, d, p, wd, wp)
		}
	}
}

func TestKolmogorovQ(t *testing.T) {
	// Exact values by derivation: for c = sqrt(-ln(h)/2), exp(-2c^2) = h, so
	// Q(c) = 2(h - h^4 + h^9 - h^16 + ...). With h = alpha/2 these c are the
	// published large-sample critical constants 1.22, 1.36, 1.63 (alpha 0.10,
	// 0.05, 0.01; Smirnov 1948, Massey 1951) to more digits.
	for _, alpha := range []float64{0.5, 0.2, 0.10, 0.05, 0.01, 0.001, 1e-8} {
		h := alpha / 2
		c := math.Sqrt(-math.Log(h) / 2)
		want := 2 * (h - math.Pow(h, 4) + math.Pow(h, 9) - math.Pow(h, 16) + math.Pow(h, 25))
		if got := kolmogorovQ(c); math.Abs(got-want) > 1e-12*want {
			t.Errorf("Q(%v) = %.15g, want %.15g", c, got, want)
		}
	}
	for _, c := range []struct{ l, alpha float64 }{{1.22, 0.10}, {1.36, 0.05}, {1.63, 0.01}} {
		if got := kolmogorovQ(c.l); math.Abs(got-c.alpha) > 0.03*c.alpha {
			t.Errorf("Q(%v) = %.5f, not about %v", c.l, got, c.alpha)
		}
	}
	// P(K <= 1) = 0.7300003283 (2*(e^-2 - e^-8 + e^-18 - ...) by hand); the two
	// series agree at their seam.
	if got := kolmogorovQ(1); math.Abs(got-(1-0.7300003283)) > 1e-9 {
		t.Errorf("Q(1) = %.10f", got)
	}
	if a, b := kolmogorovQ(1-1e-13), kolmogorovQ(1); math.Abs(a-b) > 1e-11 {
		t.Errorf("series disagree at 1: %.15g vs %.15g", a, b)
	}
	// Below 1 the small-argument form is used; there the alternating series still
	// converges (slowly), so sum it here, 200 terms, as the reference.
	for _, l := range []float64{0.3, 0.5, 0.8, 0.95} {
		s := 0.0
		for k := 200; k >= 1; k-- {
			s += math.Pow(-1, float64(k-1)) * math.Exp(-2*float64(k*k)*l*l)
		}
		if got := kolmogorovQ(l); math.Abs(got-2*s) > 1e-12 {
			t.Errorf("Q(%v) = %.15g, alternating series %.15g", l, got, 2*s)
		}
	}
	if kolmogorovQ(0.05) != 1 || kolmogorovQ(10) > 1e-80 {
		t.Errorf("tails: %v %v", kolmogorovQ(0.05), kolmogorovQ(10))
	}
}

func TestKolmogorovSmirnovAsymptoticAgreesWithExact(t *testing.T) {
	// 1001 vs 1002 is beyond the exact limit: the asymptotic p must be close to
	// the exact one (computed here by the same recursion, forced).
	r := rand.New(rand.NewPCG(9, 10))
	x, y := make([]float64, 1001), make([]float64, 1002)
	for i := range x {
		x[i] = r.NormFloat64()
	}
	for i := range y {
		y[i] = r.NormFloat64() + 0.1
	}
	d, p, err := KolmogorovSmirnov(x, y)
	if err != nil {
		t.Fatal(err)
	}
	sx := append([]float64(nil), x...)
	sy := append([]float64(nil), y...)
	sort.Float64s(sx)
	sort.Float64s(sy)
	if gd := stat.KolmogorovSmirnov(sx, nil, sy, nil); math.Abs(gd-d) > 1e-12 {
		t.Errorf("d = %v, gonum %v", d, gd)
	}
	check := make([]bool, len(x)+len(y)+1)
	for i := range check {
		check[i] = true
	}
	exact := ksExactP(len(x), len(y), int64(math.Round(d*1001*1002)), check)
	if math.Abs(p-exact) > 0.01 || p < 0.001 || p > 0.5 {
		t.Errorf("asymptotic p %.5f, exact %.5f (d %.4f)", p, exact, d)
	}
}

func TestKolmogorovSmirnovErrorsAndEqual(t *testing.T) {
	if _, _, err := KolmogorovSmirnov(nil, []float64{1}); err == nil {
		t.Error("empty x: want an error")
	}
	if _, _, err := KolmogorovSmirnov([]float64{1}, nil); err == nil {
		t.Error("empty y: want an error")
	}
	if _, _, err := KolmogorovSmirnov([]float64{1, math.NaN()}, []float64{1}); err == nil {
		t.Error("NaN: want an error")
	}
	if d, p, _ := KolmogorovSmirnov([]float64{1, 2, 3}, []float64{3, 2, 1}); d != 0 || p != 1 {
		t.Errorf("same values: d=%v p=%v, want 0 and 1", d, p)
	}
}
