package bench

import "math"

// The distributions of sysbench's sb_rand.c, each mapping draws of Rand.Float64 to
// an integer in [a, b]. The arithmetic (double products truncated to uint32, the
// special distribution using b-a where gaussian uses b-a+1) is kept as sysbench
// has it, so that a given stream of doubles gives the same integers.

// distParams are the per-run constants sb_rand_init precomputes from the options.
type distParams struct {
	kind         string
	iter         int     // --rand-spec-iter
	iterMult     float64 // 1 / iter
	pctMult      float64 // pct / 100
	pct2Mult     float64 // pct / 200
	resMult      float64 // 100 / (100 - res)
	paretoPower  float64 // log(h) / log(1-h)
	zipfExp      float64 // --rand-zipfian-exp
	zipfS        float64
	zipfHInt1    float64 // H(1.5) - 1
	zipfIntCache struct {
		n uint32
		h float64 // H(n + 0.5)
	}
}

func newDistParams(o Options) *distParams {
	p := &distParams{
		kind:        o.RandType,
		iter:        max(o.RandSpecIter, 1),
		pctMult:     float64(o.RandSpecPct) / 100,
		pct2Mult:    float64(o.RandSpecPct) / 200,
		resMult:     100 / (100 - float64(o.RandSpecRes)),
		paretoPower: math.Log(o.RandParetoH) / math.Log(1-o.RandParetoH),
		zipfExp:     o.RandZipfianExp,
	}
	p.iterMult = 1 / float64(p.iter)
	e := p.zipfExp
	p.zipfS = 2 - zipfHIntegralInverse(zipfHIntegral(2.5, e)-zipfH(2, e), e)
	p.zipfHInt1 = zipfHIntegral(1.5, e) - 1
	return p
}

// Default draws from the distribution chosen by Options.RandType
// (sysbench.rand.default, the legacy sb_rand).
func (r *Rand) Default(a, b uint32) uint32 {
	switch r.d.kind {
	case "uniform":
		return r.Uniform(a, b)
	case "gaussian":
		return r.Gaussian(a, b)
	case "pareto":
		return r.Pareto(a, b)
	case "zipfian":
		return r.Zipfian(a, b)
	default:
		return r.Special(a, b)
	}
}

// Uniform returns an integer uniform in [a, b] (sb_rand_uniform). sysbench uses it
// for the table of each statement group and the characters of strings.
func (r *Rand) Uniform(a, b uint32) uint32 {
	return uint32(float64(a) + r.Float64()*float64(b-a+1))
}

// Gaussian returns a + the mean of --rand-spec-iter uniform draws over [0, b-a+1),
// an approximately normal value centred in the range (sb_rand_gaussian).
func (r *Rand) Gaussian(a, b uint32) uint32 {
	t := float64(b - a + 1)
	sum := 0.0
	for range r.d.iter {
		sum += r.Float64() * t
	}
	return a + uint32(sum*r.d.iterMult)
}

// Special is sysbench 1.0's default distribution (sb_rand_special): with
// probability --rand-spec-res percent the value is uniform in a window of
// --rand-spec-pct percent of the range around its middle, otherwise gaussian over
// the whole range. With the defaults (iter 12, pct 1, res 75) three quarters of
// the draws fall on about 1% of the rows in the middle of the table.
func (r *Rand) Special(a, b uint32) uint32 {
	t := float64(b - a)
	rnd := r.Float64()
	if rnd*(t*r.d.resMult) < t { // the (100-res)% gaussian part
		sum := 0.0
		for range r.d.iter {
			sum += r.Float64()
		}
		return uint32(float64(a) + sum*t*r.d.iterMult)
	}
	// Map the same uniform draw onto pct% of the range, moved to its middle.
	d := t * r.d.pctMult
	res := rnd*(d+1) + t/2 - t*r.d.pct2Mult
	return a + uint32(res)
}

// Pareto returns a + (b-a+1) * u^(log h / log(1-h)) (sb_rand_pareto): with
// h = 0.2, 80% of the draws fall in the first 20% of the range.
func (r *Rand) Pareto(a, b uint32) uint32 {
	return a + uint32(float64(b-a+1)*math.Pow(r.Float64(), r.d.paretoPower))
}

// Zipfian returns a + k - 1 where k in [1, b-a+1] has probability proportional to
// 1/k^exp (sysbench 1.1's sb_rand_zipfian: rejection-inversion sampling of
// Hörmann and Derflinger, as in Apache Commons RNG's
// RejectionInversionZipfSampler). Value a is the most frequent.
func (r *Rand) Zipfian(a, b uint32) uint32 {
	n := b - a + 1
	e := r.d.zipfExp
	c := &r.d.zipfIntCache
	if c.n != n {
		c.n, c.h = n, zipfHIntegral(float64(n)+0.5, e)
	}
	hN := c.h
	for {
		u := hN + r.Float64()*(r.d.zipfHInt1-hN)
		x := zipfHIntegralInverse(u, e)
		k := uint32(x + 0.5)
		if k < 1 {
			k = 1
		} else if k > n {
			k = n
		}
		if float64(k)-x <= r.d.zipfS || u >= zipfHIntegral(float64(k)+0.5, e)-zipfH(float64(k), e) {
			return a + k - 1
		}
	}
}

// zipfHIntegral is H(x) = (x^(1-e) - 1) / (1-e), or log(x) when e = 1: the
// integral of the hat function zipfH.
func zipfHIntegral(x, e float64) float64 {
	logX := math.Log(x)
	return expm1Over((1-e)*logX) * logX
}

// zipfH is h(x) = 1 / x^e.
func zipfH(x, e float64) float64 {
	return math.Exp(-e * math.Log(x))
}

// zipfHIntegralInverse is the inverse of zipfHIntegral.
func zipfHIntegralInverse(x, e float64) float64 {
	t := x * (1 - e)
	if t < -1 { // numerical noise can push t just below its bound
		t = -1
	}
	return math.Exp(log1pOver(t) * x)
}

// log1pOver is log(1+x)/x, by Taylor series near 0.
func log1pOver(x float64) float64 {
	if math.Abs(x) > 1e-8 {
		return math.Log1p(x) / x
	}
	return 1 - x*(0.5-x*(1.0/3-0.25*x))
}

// expm1Over is (exp(x)-1)/x, by Taylor series near 0.
func expm1Over(x float64) float64 {
	if math.Abs(x) > 1e-8 {
		return math.Expm1(x) / x
	}
	return 1 + x*0.5*(1+x*(1.0/3)*(1+0.25*x))
}
