package cliflag

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/internal/usage"
)

// FuzzValues feeds every flag-value reader the same strings: a value is
// either read into its range (finite, never NaN) or refused with a usage
// error that names the flag with two dashes; never a panic.
func FuzzValues(f *testing.F) {
	for _, s := range []string{"5", "5%", "0.95", "95%", "99.9%", "1.5", "3s", "500ms", "-1", "NaN", "NaN%", "inf", "+Inf%",
		"1e309", "0x10", "1,2,4", "1,,2", " 2 ", "", "%", "1e-2%", "7d", "604801"} {
		f.Add(s)
	}
	check := func(t *testing.T, flag, s string, err error, ok func() bool) {
		t.Helper()
		if err != nil {
			if !errors.Is(err, bisect.ErrUsage) || !strings.Contains(usage.TextNamed(err, func(n string) string { return "--" + n }), "--"+flag) {
				t.Fatalf("--%s %q refused with %q: want a usage error naming --%s", flag, s, err, flag)
			}
			return
		}
		if !ok() {
			t.Fatalf("--%s %q accepted out of range", flag, s)
		}
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := Seconds("time", s)
		check(t, "time", s, err, func() bool { return d >= 0 && d <= 7*24*3600*1e9 })
		p, err := Percent("threshold", s)
		check(t, "threshold", s, err, func() bool { return p > 0 && p < 1 && !math.IsNaN(p) })
		c, err := Confidence(s)
		check(t, "confidence", s, err, func() bool { return c >= 0.5 && c < 1 })
		l, err := ThreadList(s)
		check(t, "thread-list", s, err, func() bool {
			for _, n := range l {
				if n < 1 || n > 1024 {
					return false
				}
			}
			return len(l) > 0
		})
	})
}
