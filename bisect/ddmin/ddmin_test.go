package ddmin

import (
	"context"
	"errors"
	"slices"
	"testing"
)

// culprits is a Test whose regression needs every change of each of the
// sets in any (one set is enough); it counts its calls.
func culprits(calls *int, any ...[]int) Test {
	return func(_ context.Context, subset []int, conf float64) (Verdict, float64, error) {
		*calls++
		for _, need := range any {
			all := true
			for _, c := range need {
				all = all && slices.Contains(subset, c)
			}
			if all {
				return Fails, -0.2, nil
			}
		}
		return Passes, 0, nil
	}
}

func TestMinimizeOneOfFive(t *testing.T) {
	for culprit := range 5 {
		calls := 0
		res, err := Minimize(context.Background(), 5, 0.95, culprits(&calls, []int{culprit}))
		if err != nil || !slices.Equal(res.Minimal, []int{culprit}) || res.Together || res.Alone != nil {
			t.Errorf("culprit %d: %+v, %v", culprit, res, err)
		}
		if calls != len(res.Tests) || calls > 8 {
			t.Errorf("culprit %d: %d tests (%d recorded), want at most 8 and each subset once", culprit, calls, len(res.Tests))
		}
		if res.Tests[0].Verdict != Fails || len(res.Tests[0].Subset) != 5 {
			t.Errorf("the first test is not all the changes: %+v", res.Tests[0])
		}
	}
}

// A pair that hurts only together is found as the pair, and each of it
// tested alone passes.
func TestMinimizePairOnlyTogether(t *testing.T) {
	calls := 0
	res, err := Minimize(context.Background(), 5, 0.95, culprits(&calls, []int{1, 3}))
	if err != nil || !slices.Equal(res.Minimal, []int{1, 3}) || !res.Together {
		t.Fatalf("%+v, %v", res, err)
	}
	if res.Alone[1].Verdict != Passes || res.Alone[3].Verdict != Passes {
		t.Errorf("alone: %+v", res.Alone)
	}
	// Two culprits each enough alone: one of them, not forced together.
	calls = 0
	res, err = Minimize(context.Background(), 6, 0.95, culprits(&calls, []int{0}, []int{4}))
	if err != nil || len(res.Minimal) != 1 || (res.Minimal[0] != 0 && res.Minimal[0] != 4) {
		t.Errorf("two culprits: %+v, %v", res, err)
	}
}

// Nothing to find when all the changes together pass; a test's error
// stops the search with the tests made so far.
func TestMinimizeNothingAndErrors(t *testing.T) {
	calls := 0
	res, err := Minimize(context.Background(), 4, 0.95, culprits(&calls))
	if err != nil || len(res.Minimal) != 0 || calls != 1 {
		t.Errorf("no culprit: %+v, %v, %d calls", res, err, calls)
	}
	boom := errors.New("server did not start")
	n := 0
	res, err = Minimize(context.Background(), 4, 0.95, func(_ context.Context, s []int, _ float64) (Verdict, float64, error) {
		if n++; n == 3 {
			return Passes, 0, boom
		}
		return Fails, -0.1, nil
	})
	if !errors.Is(err, boom) || len(res.Tests) != 2 {
		t.Errorf("error: %v, %d tests", err, len(res.Tests))
	}
	// Unresolved is not failing: the search goes on past it.
	calls = 0
	unresolved := func(_ context.Context, s []int, c float64) (Verdict, float64, error) {
		calls++
		if slices.Contains(s, 2) {
			if len(s) == 1 {
				return Unresolved, -0.04, nil
			}
			return Fails, -0.2, nil
		}
		return Passes, 0, nil
	}
	res, err = Minimize(context.Background(), 4, 0.95, unresolved)
	if err != nil || len(res.Minimal) < 1 || !slices.Contains(res.Minimal, 2) {
		t.Errorf("unresolved: %+v, %v", res, err)
	}
}

// The tests' levels spend at most the whole error.
func TestConfSpendsTheBudget(t *testing.T) {
	spent := 0.0
	for k := 1; k <= 10000; k++ {
		c := Conf(0.95, k)
		if c <= 0.95 || c >= 1 {
			t.Fatalf("test %d at %v", k, c)
		}
		spent += 1 - c
	}
	if spent > 0.05 || spent < 0.049 {
		t.Errorf("spent %v of 0.05", spent)
	}
}
