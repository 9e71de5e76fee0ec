package bisect

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzResolve feeds Resolve what a user might type as --good or --bad on a
// repository with version tags: it must never panic, and any ref it does not
// resolve must come back as an error that quotes the ref (so the user sees
// which input was wrong) and is one paragraph (no stack, no Go syntax).
func FuzzResolve(f *testing.F) {
	p, at := taggedRepo(f, "mariadb-10.0.22", "mariadb-10.0.26", "v10.1.1")
	r, err := OpenRepo(p.dir)
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{"10.0.22", "mariadb-10.0.26", "HEAD~1", "HEAD~99", "HEAD^2", at["HEAD"][:7], "10.0",
		"", "-n", "--all", "bad", "..", "HEAD..HEAD", "@{-1}", "10.0.22^{tree}", "v10.1.1~0", "\x00", "10.0.99", "ff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, ref string) {
		h, err := Resolve(r, ref)
		if err == nil {
			if len(h) != 40 || strings.Trim(h, "0123456789abcdef") != "" {
				t.Fatalf("Resolve(%q) = %q, want a full commit hash", ref, h)
			}
			return
		}
		msg := err.Error()
		if utf8.ValidString(ref) && ref != "" && !strings.ContainsRune(ref, 0) && !strings.Contains(msg, ref) && !errors.Is(err, ErrUsage) {
			t.Fatalf("Resolve(%q) error %q does not name the ref", ref, msg)
		}
		if strings.Contains(msg, "goroutine ") || strings.Contains(msg, "runtime error") {
			t.Fatalf("Resolve(%q): %q", ref, msg)
		}
	})
}
