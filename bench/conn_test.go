package bench

import (
	"database/sql/driver"
	"math"
	"testing"
)

// CONNECTION_ID() comes as int64, text, or uint64 (MySQL 5.6.21 answered
// uint64 3, which the workload refused: its good endpoint was untestable).
func TestConnIDOf(t *testing.T) {
	for _, c := range []struct {
		v    driver.Value
		want int64
		ok   bool
	}{
		{int64(7), 7, true}, {uint64(3), 3, true}, {[]byte("42"), 42, true},
		{uint64(math.MaxUint64), 0, false}, {"3", 0, false}, {[]byte("x"), 0, false},
	} {
		got, err := connIDOf(c.v)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("%T %v: %d %v, want %d (ok %v)", c.v, c.v, got, err, c.want, c.ok)
		}
	}
}
