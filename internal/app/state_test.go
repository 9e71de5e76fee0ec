package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/bisect/session"
	"github.com/perfbisect/perfbisect/bisect/store"
	"github.com/perfbisect/perfbisect/internal/testenv"
)

func TestMakeStateDir(t *testing.T) {
	root := t.TempDir()
	tree := filepath.Join(root, "server")
	if err := os.Mkdir(tree, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{filepath.Join(tree, "state"), tree, root} {
		if _, err := MakeStateDir(bad, tree); OutcomeOf(err) != Usage || !strings.Contains(err.Error(), "overlaps the repository's work tree") {
			t.Errorf("MakeStateDir(%s) beside the tree %s: %v, want a usage error", bad, tree, err)
		}
	}
	want := filepath.Join(root, "state", "nested")
	dir, err := MakeStateDir(want, tree)
	if err != nil || dir != want {
		t.Fatalf("MakeStateDir = %q, %v", dir, err)
	}
	if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("made with mode %v (%v), want 0700", st.Mode().Perm(), err)
	}
	if w := Where(dir, tree); w != "--state-dir "+dir {
		t.Errorf("Where = %q for a named state directory", w)
	}
	// FindStateDir reads, never creates.
	missing := filepath.Join(root, "missing")
	if got, err := FindStateDir(tree, missing); err != nil || got != missing {
		t.Errorf("FindStateDir = %q, %v", got, err)
	}
	if _, err := os.Stat(missing); err == nil {
		t.Errorf("FindStateDir created %s", missing)
	}
	if st, err := OpenStore(missing); st != nil || err != nil {
		t.Errorf("OpenStore of a directory without a store: %v, %v; want nil, nil", st, err)
	}
	if _, err := FindStateDir(tree, ""); OutcomeOf(err) != Usage || !strings.Contains(err.Error(), "--state-dir") {
		t.Errorf("FindStateDir of a directory that is not a repository: %v, want a usage error naming --state-dir", err)
	}
}

func TestLockAndReapRefusesASecondSession(t *testing.T) {
	dir := t.TempDir()
	unlock, err := LockAndReap(dir, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	if _, err := LockAndReap(dir, os.Stderr); OutcomeOf(err) != Usage || !strings.Contains(err.Error(), "in use by another perfbisect") {
		t.Errorf("second LockAndReap: %v, want a usage error", err)
	}
}

// TestReset ends the unfinished start session and only it; with none, or
// no store, it says there is none.
func TestReset(t *testing.T) {
	dir := t.TempDir()
	if cur, err := Reset(dir); cur != nil || err != nil {
		t.Fatalf("no store: %v, %v", cur, err)
	}
	st, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	s, err := st.Begin(store.KindStart, []string{"start"}, "/", "g", "b", store.Identity{"good": "g"})
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	cur, err := Reset(dir)
	if err != nil || cur == nil || cur.ID != s.ID {
		t.Fatalf("Reset = %v, %v; want session %d", cur, err, s.ID)
	}
	if cur, err := Reset(dir); cur != nil || err != nil {
		t.Fatalf("after the reset: %v, %v; want none", cur, err)
	}
}

func TestChooseSession(t *testing.T) {
	all := []*store.Session{{ID: 1, Result: []byte(`{}`)}, {ID: 2, Result: []byte(`{}`)}, {ID: 3}}
	if s, err := ChooseSession(all, "", "/s"); err != nil || s.ID != 2 {
		t.Errorf("latest with a report: %v, %v; want session 2", s, err)
	}
	if s, err := ChooseSession(all, "3", "/s"); err != nil || s.ID != 3 {
		t.Errorf("session 3: %v, %v", s, err)
	}
	for _, arg := range []string{"4", "x", "0"} {
		if _, err := ChooseSession(all, arg, "/s"); OutcomeOf(err) != Usage {
			t.Errorf("session %q: %v, want a usage error", arg, err)
		}
	}
	if _, err := ChooseSession(all[2:], "", "/s"); OutcomeOf(err) != Usage {
		t.Errorf("no finished session: %v, want a usage error", err)
	}
}

// TestStoreOnAReadOnlyDisk: status, log and report read a state directory
// whose disk went read-only (a real tmpfs remounted so): OpenStore falls
// back to reading only, and the stored session shows.
func TestStoreOnAReadOnlyDisk(t *testing.T) {
	dir := testenv.Tmpfs(t, "64m")
	st, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	sess, _ := st.Begin(store.KindStart, []string{"start", "--good", "v1"}, "/src", "aaaa", "bbbb", store.Identity{"repo": "/nonexistent"})
	r := bisect.Run{Commit: "aaaa", TPS: 100}
	_ = st.Append(sess.ID, 0, session.Event{Kind: session.EventRun, Commit: "aaaa", Run: &r})
	st.Close()
	testenv.ReadOnly(t, dir, "64m")
	ro, err := OpenStore(dir)
	if err != nil || ro == nil {
		t.Fatalf("OpenStore on a read-only disk: %v", err)
	}
	defer ro.Close()
	s, err := LoadLatest(ro)
	if err != nil || s == nil || s.Runs != 1 {
		t.Fatalf("LoadLatest: %+v %v", s, err)
	}
	var b strings.Builder
	s.WriteStatus(&b, dir)
	if !strings.Contains(b.String(), "session 1: unfinished (no perfbisect can work on it now") || !strings.Contains(b.String(), "read-only file system") ||
		!strings.Contains(b.String(), "runs stored: 1") {
		t.Errorf("status on a read-only disk:\n%s", b.String())
	}
}
