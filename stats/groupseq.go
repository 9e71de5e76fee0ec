package stats

import (
	"fmt"
	"math"
	"sync"
)

// PocockLevel is the one-sided nominal level that every look of a
// group-sequential test with looks after ns[0] < ns[1] < ... runs per side
// may use so that the chance of crossing at any look, with no shift, is
// alpha (Pocock's boundary for unequal steps, one-sided). The statistic is
// taken as a Brownian motion sampled at the looks' sizes, as a
// standardized sum of independent runs is (and the rank statistics behind
// Compare are asymptotically: Jennison & Turnbull, Group Sequential
// Methods, 2000, ch. 3 and 11); the crossing probability comes from the
// recursive numerical integration of Armitage, McPherson and Rowe (1969)
// on a grid (Jennison & Turnbull ch. 19). Because the looks share their
// runs, the level is well above Bonferroni's alpha/len(ns): about 3 times
// it at 17 looks and alpha 0.005. One look: alpha itself.
func PocockLevel(ns []int, alpha float64) float64 {
	if len(ns) <= 1 || !(alpha > 0 && alpha < 0.5) {
		return alpha
	}
	key := pocockKey{looks: fmt.Sprint(ns), alpha: alpha}
	if v, ok := pocockCache.Load(key); ok {
		return v.(float64)
	}
	v := pocockLevel(ns, alpha)
	pocockCache.Store(key, v)
	return v
}

type pocockKey struct {
	looks string // the looks' sizes, as fmt prints them
	alpha float64
}

var pocockCache sync.Map // pocockKey -> float64

func pocockLevel(ns []int, alpha float64) float64 {
	// The crossing probability falls as the boundary c rises: bisect on c
	// between Bonferroni's (crossing at most alpha) and the one-look
	// quantile (at least alpha).
	lo, hi := normalQuantile(1-alpha), normalQuantile(1-alpha/float64(len(ns)))
	for i := 0; i < 50 && hi-lo > 1e-6; i++ {
		c := (lo + hi) / 2
		if crossing(ns, c) > alpha {
			lo = c
		} else {
			hi = c
		}
	}
	return 1 - normalCDF(hi)
}

// crossing is the probability that a standard Brownian motion W, looked at
// at times ns, is at or above c*sqrt(t) at one look at least.
func crossing(ns []int, c float64) float64 {
	tMax := float64(ns[len(ns)-1])
	// The grid: from 8 standard deviations below 0 at the last look to the
	// highest boundary, in steps small against the smallest increment.
	minStep := float64(ns[0])
	for i := 1; i < len(ns); i++ {
		minStep = math.Min(minStep, float64(ns[i]-ns[i-1]))
	}
	h := math.Sqrt(minStep) / 40
	low := -8 * math.Sqrt(tMax)
	top := c * math.Sqrt(tMax)
	m := int((top-low)/h) + 2
	w := func(i int) float64 { return low + float64(i)*h }
	density := make([]float64, m)
	t0 := float64(ns[0])
	b := c * math.Sqrt(t0)
	for i := range density {
		if w(i) < b {
			density[i] = normalPDF(w(i)/math.Sqrt(t0)) / math.Sqrt(t0)
		}
	}
	next := make([]float64, m)
	for k := 1; k < len(ns); k++ {
		dt := float64(ns[k] - ns[k-1])
		sd := math.Sqrt(dt)
		b = c * math.Sqrt(float64(ns[k]))
		reach := int(8*sd/h) + 1
		kernel := make([]float64, reach+1) // by distance in grid steps
		for d := range kernel {
			kernel[d] = normalPDF(float64(d)*h/sd) * h / sd
		}
		for i := range next {
			next[i] = 0
			if w(i) >= b {
				continue
			}
			s := 0.0
			for j := max(0, i-reach); j < min(m, i+reach+1); j++ {
				d := i - j
				if d < 0 {
					d = -d
				}
				s += density[j] * kernel[d]
			}
			next[i] = s
		}
		density, next = next, density
	}
	mass := 0.0
	for _, d := range density {
		mass += d
	}
	return 1 - mass*h
}

func normalPDF(x float64) float64 { return math.Exp(-x*x/2) / math.Sqrt(2*math.Pi) }
