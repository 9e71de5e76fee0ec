package archmap

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestArchitectureTableIsCurrent: docs/architecture.md's package table is
// the one the code prints (go run ./scripts/architecture -w rewrites it).
func TestArchitectureTableIsCurrent(t *testing.T) {
	root := filepath.Join("..", "..")
	table, err := Table(root)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := Replace(string(doc), table)
	if err != nil {
		t.Fatal(err)
	}
	if want != string(doc) {
		t.Errorf("docs/architecture.md's package table is stale: run go run ./scripts/architecture -w\n--- the code's table\n%s", table)
	}
	for _, p := range []string{"`bisect/measure`", "`cmd/perfbisect`", "`internal/archmap`"} {
		if !strings.Contains(table, p) {
			t.Errorf("the table has no %s:\n%s", p, table)
		}
	}
}

func TestFirstSentenceAndHundreds(t *testing.T) {
	for in, want := range map[string]string{
		"Package lru bounds the disk space. It measures them.":         "bounds the disk space.",
		"Command perfbisect finds the commit (e.g. 10.0.24).\n\nMore.": "finds the commit (e.g. 10.0.24).",
		"Package x is a thing, per-run (2.5 s). Then":                  "is a thing, per-run (2.5 s).",
		"Package app is it (i.e. this). docs/x.md shows more.":         "is it (i.e. this).",
	} {
		if got := firstSentence(in); got != want {
			t.Errorf("firstSentence(%q) = %q, want %q", in, got, want)
		}
	}
	for n, want := range map[int]string{0: "<100", 49: "<100", 50: "~100", 1449: "~1,400", 1450: "~1,500", 12049: "~12,000"} {
		if got := hundreds(n); got != want {
			t.Errorf("hundreds(%d) = %q, want %q", n, got, want)
		}
	}
}
