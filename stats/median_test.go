package stats

import (
	"math"
	"math/big"
	"testing"
)

func TestMedianCIBinomialTables(t *testing.T) {
	// Binomial(n, 1/2) probabilities (as tabulated in Conover, Practical
	// Nonparametric Statistics, and other binomial tables), checked by hand:
	//   n=10 at 95%: P(B <= 1) = 11/1024, coverage of [x(2), x(9)] = 1 - 22/1024 = 0.978515625;
	//                [x(3), x(8)] would cover 1 - 2*56/1024 = 0.890625.
	//   n=6 at 95%:  [x(1), x(6)] covers 1 - 2/64 = 0.96875.
	//   n=5 at 95%:  [x(1), x(5)] covers 1 - 2/32 = 0.9375 < 0.95: impossible.
	//   n=20 at 95%: P(B <= 5) = 21700/2^20, [x(6), x(15)] covers 0.958610534667969;
	//                P(B <= 6) = 60460/2^20 gives 0.88468 for [x(7), x(14)].
	//   n=8 at 99%:  [x(1), x(8)] covers 1 - 2/256 = 0.9921875; n=7 (0.984375) cannot.
	cases := []struct {
		n    int
		conf float64
		k    int
		cov  float64
	}{
		{10, 0.95, 2, 0.978515625},
		{6, 0.95, 1, 0.96875},
		{5, 0.95, 0, 0},
		{20, 0.95, 6, 1 - 2*21700.0/1048576},
		{8, 0.99, 1, 0.9921875},
		{7, 0.99, 0, 0},
		{6, 0.96875, 1, 0.96875}, // coverage exactly equal to conf is enough
		{1, 0.5, 0, 0},
	}
	for _, c := range cases {
		k, cov := MedianCIOrder(c.n, c.conf)
		if k != c.k || math.Abs(cov-c.cov) > 1e-12 {
			t.Errorf("MedianCIOrder(%d, %v) = %d, %v; want %d, %v", c.n, c.conf, k, cov, c.k, c.cov)
		}
	}
	xs := []float64{7, 3, 9, 1, 10, 5, 2, 8, 6, 4} // x(i) = i
	lo, hi, ok := MedianCI(xs, 0.95)
	if !ok || lo != 2 || hi != 9 {
		t.Errorf("n=10 at 95%%: [%v, %v] %v, want [2, 9]", lo, hi, ok)
	}
	if xs[0] != 7 {
		t.Error("MedianCI sorted its argument")
	}
	lo, hi, ok = MedianCI([]float64{5, 1, 3, 2, 4, 6}, 0.95)
	if !ok || lo != 1 || hi != 6 {
		t.Errorf("n=6 at 95%%: [%v, %v] %v, want [1, 6]", lo, hi, ok)
	}
	if lo, hi, ok := MedianCI([]float64{1, 2, 3, 4, 5}, 0.95); ok || !math.IsInf(lo, -1) || !math.IsInf(hi, 1) {
		t.Errorf("n=5 at 95%%: [%v, %v] %v, want unbounded and not ok", lo, hi, ok)
	}
	if _, _, ok := MedianCI([]float64{1, 2, 3, 4, 5, 6, 7, 8}, 1); ok {
		t.Error("conf 1: want not ok")
	}
}

func TestMedianCIOrderExact(t *testing.T) {
	// For every n up to 300 and several levels, k and the coverage must be those
	// found with exact rational binomial sums: coverage(k) = 1 - 2*sum_{i<k} C(n,i)/2^n.
	confs := []float64{0.5, 0.9, 0.95, 0.99, 0.999}
	row := []*big.Int{big.NewInt(1)} // row n of Pascal's triangle
	for n := 1; n <= 300; n++ {
		next := make([]*big.Int, n+1)
		for i := range next {
			next[i] = new(big.Int)
			if i < n {
				next[i].Add(next[i], row[i])
			}
			if i > 0 {
				next[i].Add(next[i], row[i-1])
			}
		}
		row = next
		pow := new(big.Int).Lsh(big.NewInt(1), uint(n))
		for _, conf := range confs {
			confR := new(big.Rat).SetFloat64(conf)
			wantK, wantCov := 0, 0.0
			tail := new(big.Int)
			for k := 1; k <= n/2; k++ {
				tail.Add(tail, row[k-1])
				c := new(big.Rat).Sub(big.NewRat(1, 1), new(big.Rat).SetFrac(new(big.Int).Lsh(tail, 1), pow))
				if c.Cmp(confR) < 0 {
					break
				}
				wantK = k
				wantCov, _ = c.Float64()
			}
			k, cov := MedianCIOrder(n, conf)
			if k != wantK || math.Abs(cov-wantCov) > 1e-12 {
				t.Fatalf("MedianCIOrder(%d, %v) = %d, %.15g; exact %d, %.15g", n, conf, k, cov, wantK, wantCov)
			}
		}
	}
}
