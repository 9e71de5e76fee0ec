package measure

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/perfbisect/perfbisect/serverctl"
)

// TestEvictSnapshots fills a state directory with prepared datadirs of 1 MiB
// each, used at different times, and checks that the least recently used ones
// go first, that the ones in use stay even over budget, and that snapshots
// being prepared or without the datadir mark are left alone.
func TestEvictSnapshots(t *testing.T) {
	state := t.TempDir()
	mk := func(name string, age time.Duration, complete, mark bool) string {
		d := filepath.Join(state, "datadirs", name)
		data := filepath.Join(d, "data")
		os.MkdirAll(data, 0o700)
		if mark {
			os.WriteFile(filepath.Join(data, serverctl.DatadirMark), nil, 0o600)
		}
		os.WriteFile(filepath.Join(data, "ibdata1"), bytes.Repeat([]byte{1}, 1<<20), 0o600)
		if complete {
			c := filepath.Join(d, "complete")
			os.WriteFile(c, nil, 0o600)
			when := time.Now().Add(-age)
			os.Chtimes(c, when, when)
		}
		return d
	}
	oldest := mk("a-oldest", 5*time.Hour, true, true)
	old := mk("b-old-format", 4*time.Hour, true, false) // before datadirs were marked
	inUse := mk("c-in-use", 3*time.Hour, true, true)
	recent := mk("d-recent", time.Hour, true, true)
	preparing := mk("e-preparing", 0, false, true)
	var log strings.Builder
	m := New(Config{StateDir: state, SnapshotBudget: 2<<20 + 1<<19, Log: &log})
	m.revs["c"] = &revision{snapshot: filepath.Join(inUse, "data")}
	m.evictSnapshots()
	// a goes, b is not marked (kept, said), c is in use, so d goes too.
	for d, want := range map[string]bool{oldest: false, old: true, inUse: true, recent: false, preparing: true} {
		if _, err := os.Stat(d); (err == nil) != want {
			t.Errorf("%s: exists %v, want %v", filepath.Base(d), err == nil, want)
		}
	}
	if !strings.Contains(log.String(), "evicted datadir snapshot a-oldest") || !strings.Contains(log.String(), "not a datadir perfbisect created") {
		t.Errorf("log: %s", log.String())
	}
	// Over budget with only snapshots in use: kept, and said.
	log.Reset()
	m.cfg.SnapshotBudget = 1 << 10
	m.evictSnapshots()
	if _, err := os.Stat(inUse); err != nil || !strings.Contains(log.String(), "over the") {
		t.Errorf("in-use snapshots: %v; log %s", err, log.String())
	}
}
