// Package ddmin finds which of a set of changes carries a regression: delta
// debugging's ddmin (Zeller and Hildebrandt, "Simplifying and Isolating
// Failure-Inducing Input", TSE 2002) over the changes, each test a
// comparison of the base with some of the changes applied. It knows
// nothing of option files or servers: a Test says, for a subset, whether
// the regression is there.
package ddmin

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Verdict is what one test said of a subset.
type Verdict int

const (
	// Passes: no regression with the subset applied.
	Passes Verdict = iota
	// Fails: the regression is there.
	Fails
	// Unresolved: the comparison could not tell (inconclusive). ddmin
	// treats it as not failing, as Zeller's does.
	Unresolved
)

func (v Verdict) String() string {
	return [...]string{"passes", "fails", "unresolved"}[v]
}

// A Test compares the base with the changes of subset (indexes into the
// changes, ascending) applied, at confidence level conf, and returns its
// verdict and the change it measured (relative, -0.08 for 8% slower).
type Test func(ctx context.Context, subset []int, conf float64) (Verdict, float64, error)

// Tested is one test made.
type Tested struct {
	Subset  []int
	Verdict Verdict
	Change  float64
	Conf    float64
}

// Result is what Minimize found.
type Result struct {
	// Minimal is a 1-minimal failing subset: it fails, and removing any
	// one change of it passes (as far as its tests said). Empty when all
	// the changes together do not fail.
	Minimal []int
	// Alone is each change of Minimal tested on its own (when Minimal has
	// more than one): a change that fails alone carries the regression by
	// itself; when none does, they hurt only together.
	Alone map[int]Tested
	// Together says that Minimal's changes hurt only together (a pair, a
	// triple): none of them fails alone.
	Together bool
	Tests    []Tested
}

// Conf is the confidence level of the k-th test (1-based) of a search at
// overall confidence conf: the error 1-conf is spent over the tests as
// 6/(pi^2 k^2) of it each (the sum over every k is the whole), so any
// number of tests keeps the chance of any wrong verdict at most 1-conf.
func Conf(conf float64, k int) float64 {
	return 1 - (1-conf)*6/(math.Pi*math.Pi*float64(k*k))
}

// Minimize runs ddmin over the changes 0..n-1 at overall confidence conf:
// first all of them (they must fail: otherwise there is nothing to find and
// Minimal is empty), then subsets and complements at growing granularity
// until a 1-minimal failing subset remains; each change of a minimal set of
// two or more is then tested alone. A subset is tested once (its verdict is
// remembered). Errors are the Test's.
func Minimize(ctx context.Context, n int, conf float64, test Test) (Result, error) {
	m := &minimizer{test: test, conf: conf, seen: map[string]Tested{}}
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	res := Result{}
	v, err := m.run(ctx, all)
	if err != nil || v != Fails || n == 0 {
		res.Tests = m.tests
		return res, err
	}
	found, err := m.ddmin(ctx, all, 2)
	res.Minimal, res.Tests = found, m.tests
	if err != nil || len(found) < 2 {
		return res, err
	}
	res.Alone = map[int]Tested{}
	res.Together = true
	for _, c := range found {
		if _, err := m.run(ctx, []int{c}); err != nil {
			res.Tests = m.tests
			return res, err
		}
		t := m.seen[key([]int{c})]
		res.Alone[c] = t
		if t.Verdict == Fails {
			res.Together = false
		}
	}
	res.Tests = m.tests
	return res, nil
}

type minimizer struct {
	test  Test
	conf  float64
	seen  map[string]Tested
	tests []Tested
}

func key(s []int) string { return fmt.Sprint(s) }

// run tests subset once (later calls return the verdict remembered).
func (m *minimizer) run(ctx context.Context, subset []int) (Verdict, error) {
	if t, ok := m.seen[key(subset)]; ok {
		return t.Verdict, nil
	}
	conf := Conf(m.conf, len(m.tests)+1)
	v, change, err := m.test(ctx, slices.Clone(subset), conf)
	if err != nil {
		return Unresolved, err
	}
	t := Tested{Subset: slices.Clone(subset), Verdict: v, Change: change, Conf: conf}
	m.seen[key(subset)] = t
	m.tests = append(m.tests, t)
	return v, nil
}

// ddmin is Zeller's: c fails; split it into n parts; a failing part, or a
// failing complement, is searched further; else the granularity doubles
// until it is c's size.
func (m *minimizer) ddmin(ctx context.Context, c []int, n int) ([]int, error) {
	for len(c) >= 2 {
		parts := split(c, n)
		reduced := false
		for _, p := range parts {
			v, err := m.run(ctx, p)
			if err != nil {
				return c, err
			}
			if v == Fails {
				c, n, reduced = p, 2, true
				break
			}
		}
		if !reduced && n > 2 { // with two parts, each complement is the other part: tested
			for _, p := range parts {
				comp := without(c, p)
				v, err := m.run(ctx, comp)
				if err != nil {
					return c, err
				}
				if v == Fails {
					c, n, reduced = comp, max(n-1, 2), true
					break
				}
			}
		}
		if reduced {
			continue
		}
		if n >= len(c) {
			return c, nil
		}
		n = min(len(c), 2*n)
	}
	return c, nil
}

// split cuts c into n parts of nearly equal size, in order.
func split(c []int, n int) [][]int {
	var parts [][]int
	start := 0
	for i := 0; i < n; i++ {
		end := start + (len(c)-start)/(n-i)
		if end > start {
			parts = append(parts, c[start:end])
		}
		start = end
	}
	return parts
}

// without is c without the elements of p.
func without(c, p []int) []int {
	var out []int
	for _, x := range c {
		if !slices.Contains(p, x) {
			out = append(out, x)
		}
	}
	return out
}

// Describe names a subset with names of the changes: "a, b".
func Describe(subset []int, names []string) string {
	var out []string
	for _, i := range subset {
		out = append(out, names[i])
	}
	return strings.Join(out, ", ")
}
