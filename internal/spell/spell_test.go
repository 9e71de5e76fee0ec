package spell

import "testing"

func TestNearest(t *testing.T) {
	names := []string{"start", "status", "reset", "oltp_read_only", "oltp_read_write", "threads", "tables"}
	for typed, want := range map[string]string{
		"strat": "start", "stauts": "status", "thraeds": "threads", "oltp_readonly": "oltp_read_only",
		"oltp_read_wirte": "oltp_read_write", "nosuch": "", "version": "", "": "", "tabels": "tables",
	} {
		if got := Nearest(typed, names); got != want {
			t.Errorf("Nearest(%q) = %q, want %q", typed, got, want)
		}
	}
}
