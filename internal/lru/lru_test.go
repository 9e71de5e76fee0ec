package lru

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestEvictOldestFirstKeepingInUseAndUndeletable(t *testing.T) {
	now := time.Now()
	e := func(dir string, ageH int, bytes int64) Entry {
		return Entry{Dir: dir, Used: now.Add(-time.Duration(ageH) * time.Hour), Bytes: bytes}
	}
	entries := []Entry{e("new", 1, 10), e("oldest", 5, 10), e("in-use", 4, 10), e("stuck", 3, 10), e("mid", 2, 10)}
	var removed []string
	left := Evict(entries, 25, func(x Entry) bool { return x.Dir == "in-use" }, func(x Entry) bool {
		removed = append(removed, x.Dir)
		return x.Dir != "stuck"
	})
	// 50 bytes, budget 25: oldest goes (40), in-use stays, stuck fails, mid goes (30), new goes (20).
	if got := strings.Join(removed, " "); got != "oldest stuck mid new" || left != 20 {
		t.Errorf("removed %q, %d bytes left; want oldest stuck mid new, 20", got, left)
	}
	removed = nil
	if left := Evict(entries, 100, nil, func(x Entry) bool { removed = append(removed, x.Dir); return true }); len(removed) != 0 || left != 50 {
		t.Errorf("under budget: removed %v, left %d", removed, left)
	}
}

func TestSizerCountsHardLinksOnce(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	data := make([]byte, 64<<10)
	if err := os.WriteFile(filepath.Join(a, "f"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(a, "f"), filepath.Join(b, "f")); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(b, "own"), data, 0o644)
	var s Sizer
	first, second := s.Bytes(a), s.Bytes(b)
	if first < 64<<10 || second < 64<<10 || second >= first+64<<10 {
		t.Errorf("a %d bytes, b %d bytes: the shared file must be counted once (in a)", first, second)
	}
	var fresh Sizer
	if got := fresh.Bytes(b); got < 128<<10 {
		t.Errorf("b alone: %d bytes, want both files", got)
	}
}
