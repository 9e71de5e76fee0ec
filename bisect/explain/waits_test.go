package explain

import "testing"

// TestWaits: a wait event whose time per transaction rose in every pair of
// runs is listed in µs of a transaction; one that moved within the runs'
// spread, or by less than a microsecond, is not; the times are not
// counters (they stay out of Counters).
func TestWaits(t *testing.T) {
	run := func(file, mutex, tiny int64) Run {
		return Run{Events: 1000, TPS: 100, CPUPerTxn: 500, Status: map[string]int64{
			WaitPrefix + "wait/io/file/innodb/innodb_data_file":   file * 1e9, // ps: file ms
			WaitPrefix + "wait/synch/mutex/innodb/buf_pool_mutex": mutex * 1e9,
			WaitPrefix + "wait/io/table/sql/handler":              tiny * 1e5,
			"Innodb_buffer_pool_reads":                            10,
		}}
	}
	base := []Run{run(10, 5, 1), run(11, 6, 2), run(12, 4, 1)}
	head := []Run{run(50, 6, 3), run(55, 4, 5), run(60, 5, 4)}
	e := Explain("a", "b", base, head, Options{})
	if len(e.Waits) != 1 || e.Waits[0].Name != "wait/io/file/innodb/innodb_data_file" || e.Waits[0].Base != 11 || e.Waits[0].Head != 55 || e.Waits[0].Lo != 38 {
		t.Errorf("waits %+v: want the data file's 11 -> 55 µs a transaction alone", e.Waits)
	}
	for _, c := range e.Counters {
		if c.Name != "Innodb_buffer_pool_reads" {
			t.Errorf("counter %s: a time waited is not a counter", c.Name)
		}
	}
}
