package serverctl

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestOptionFileDigestFollowsIncludes(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("my.cnf", "[mysqld]\nmax_connections=50\n!include extra.cnf\n!includedir conf.d\n")
	write("extra.cnf", "[mysqld]\ntable_open_cache=400\n")
	write("conf.d/a.cnf", "[mysqld]\ninnodb_buffer_pool_size=256M\n")
	write("conf.d/ignored.txt", "not read by the server\n")
	main := filepath.Join(dir, "my.cnf")
	d0, err := OptionFileDigest(main)
	if err != nil {
		t.Fatal(err)
	}
	change := func(name, text string) string {
		t.Helper()
		write(name, text)
		d, err := OptionFileDigest(main)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if d := change("conf.d/ignored.txt", "still not read\n"); d != d0 {
		t.Error("a file !includedir does not read changed the digest")
	}
	d1 := change("extra.cnf", "[mysqld]\ntable_open_cache=400\ninnodb_buffer_pool_size=6M\n")
	if d1 == d0 {
		t.Error("an edit of an !include'd file did not change the digest")
	}
	if d2 := change("conf.d/b.cnf", "[mysqld]\nskip-name-resolve\n"); d2 == d1 {
		t.Error("a new file in an !includedir did not change the digest")
	}
	// A loop ends; a missing include is part of the digest; a missing file is
	// an option-file error.
	write("extra.cnf", "!include my.cnf\n")
	if _, err := OptionFileDigest(main); err != nil {
		t.Errorf("include loop: %v", err)
	}
	write("extra.cnf", "!include missing.cnf\n")
	dm, err := OptionFileDigest(main)
	if err != nil {
		t.Errorf("missing include: %v", err)
	}
	write("missing.cnf", "[mysqld]\n")
	if d, _ := OptionFileDigest(main); d == dm {
		t.Error("creating the missing include did not change the digest")
	}
	if _, err := OptionFileDigest(filepath.Join(dir, "nope.cnf")); !errors.Is(err, ErrOptionFile) {
		t.Errorf("missing option file: %v", err)
	}
}
