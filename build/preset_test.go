package build

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	git "github.com/go-git/go-git/v5"
)

// treeRepo makes an empty git repository for trees written file by file:
// its directory, git in it, write (a file, its directories made), and
// commit (everything, returning the hash).
func treeRepo(t *testing.T) (dir string, g func(...string) string, write func(name, content string), commit func() string) {
	dir = t.TempDir()
	g = gitIn(t, dir)
	g("init", "-q", "-b", "main")
	write = func(name, content string) {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	commit = func() string { g("add", "-A"); g("commit", "-qm", "c"); return g("rev-parse", "HEAD") }
	return dir, g, write, commit
}

// The preset follows the tree's flavor and version, commit by commit, and
// the user's --cmake-args come after it.
func TestPresetByTree(t *testing.T) {
	dir, g, write, commit := treeRepo(t)
	write("CMakeLists.txt", "project(x C)\n")
	plain := commit()
	write("storage/maria/ha_maria.cc", "\n")
	write("VERSION", "\ufeffMYSQL_VERSION_MAJOR='10' # major\nexport MYSQL_VERSION_MINOR=0\r\nMYSQL_VERSION_PATCH=\"22\"\nMYSQL_VERSION_EXTRA=\n")
	old := commit()
	write("VERSION", "MYSQL_VERSION_MAJOR=10\nMYSQL_VERSION_MINOR=11\nMYSQL_VERSION_PATCH=18\nSERVER_MATURITY=stable\n")
	cur := commit()
	g("rm", "-rq", "storage/maria")
	noAria := commit() // a 10.x VERSION alone is MariaDB's (MySQL went from 8 to 9)
	g("rm", "-q", "VERSION")
	write("MYSQL_VERSION", "MYSQL_VERSION_MAJOR=8\nMYSQL_VERSION_MINOR=0\nMYSQL_VERSION_PATCH=36\n")
	mysql := commit()
	repo, _ := git.PlainOpen(dir)

	b := &Builder{Repo: repo, Recipe: Recipe{CMakeArgs: []string{"-DWITH_SSL=bundled"}}}
	cases := []struct {
		commit, tree, preset string
		has, hasNot          []string
	}{
		{plain, "not a MariaDB/MySQL tree", "", nil, []string{"-DWITH_UNIT_TESTS=OFF"}},
		{old, "MariaDB 10.0.22", "mariadb", []string{"-DWITH_UNIT_TESTS=OFF", "-DCMAKE_CXX_FLAGS=-std=gnu++98 -Wno-error"}, []string{"-DWITH_SSL=system"}},
		{cur, "MariaDB 10.11.18", "mariadb", []string{"-DPLUGIN_ROCKSDB=NO", "-DWITH_SSL=system"}, []string{"-DCMAKE_CXX_STANDARD=98"}},
		{noAria, "MariaDB 10.11.18", "mariadb", []string{"-DPLUGIN_ROCKSDB=NO"}, nil},
		{mysql, "MySQL 8.0.36", "mysql", []string{"-DWITH_ROUTER=OFF", "-DWITH_SSL=system"}, []string{"-DPLUGIN_ROCKSDB=NO"}},
	}
	hashes := map[string]bool{}
	for _, c := range cases {
		r, err := b.Resolve(c.commit)
		if err != nil {
			t.Fatal(err)
		}
		if r.Tree.String() != c.tree || r.Preset != c.preset {
			t.Errorf("%s: tree %q preset %q, want %q %q", c.tree, r.Tree, r.Preset, c.tree, c.preset)
		}
		for _, a := range c.has {
			if !slices.Contains(r.Args, a) {
				t.Errorf("%s: %s missing from %q", c.tree, a, r.Args)
			}
		}
		for _, a := range c.hasNot {
			if slices.Contains(r.Args, a) {
				t.Errorf("%s: %s in %q", c.tree, a, r.Args)
			}
		}
		if r.Args[len(r.Args)-1] != "-DWITH_SSL=bundled" {
			t.Errorf("%s: the user's argument is not last: %q", c.tree, r.Args)
		}
		hashes[r.Hash] = true
	}
	if len(hashes) != len(cases)-1 { // cur and noAria share one
		t.Errorf("%d build directories for %d different recipes", len(hashes), len(cases))
	}
	// --preset none and a named preset.
	b.Recipe.Preset = "none"
	if r, _ := b.Resolve(cur); r.Preset != "" || len(r.Args) != 1 {
		t.Errorf("--preset none: %q %q", r.Preset, r.Args)
	}
	b.Recipe.Preset = "mysql"
	if r, _ := b.Resolve(cur); r.Preset != "mysql" {
		t.Errorf("--preset mysql on a MariaDB tree: %q", r.Preset)
	}
	b.Recipe.Preset = "percona"
	if _, err := b.Resolve(cur); err == nil || !strings.Contains(err.Error(), "mariadb, mysql") {
		t.Errorf("unknown preset: %v", err)
	}
}

// A tree whose cmake/ssl.cmake takes a system OpenSSL only below 3.0 (as
// MariaDB 10.3.39's does, after the release said 10.3.32 supports OpenSSL 3)
// gets the bundled SSL; the same version without that check gets the
// system's.
func TestPresetBundlesSSLWhenTheTreeRefusesOpenSSL3(t *testing.T) {
	dir, _, write, commit := treeRepo(t)
	write("VERSION", "MYSQL_VERSION_MAJOR=10\nMYSQL_VERSION_MINOR=3\nMYSQL_VERSION_PATCH=39\n")
	write("cmake/ssl.cmake", "    FIND_PACKAGE(OpenSSL)\n    IF(OPENSSL_FOUND AND OPENSSL_VERSION AND OPENSSL_VERSION VERSION_LESS \"3.0.0\")\n      SET(OPENSSL_LIBRARY ${OPENSSL_SSL_LIBRARY})\n")
	refuses := commit()
	write("cmake/ssl.cmake", "    FIND_PACKAGE(OpenSSL)\n    IF(OPENSSL_FOUND)\n")
	takes := commit()
	// MariaDB 10.5.23 and 10.11.18 test the version only to silence
	// OpenSSL 3's deprecations (10.11.18 was built with bundled SSL for it).
	write("cmake/ssl.cmake", "    FIND_PACKAGE(OpenSSL)\n    IF(OPENSSL_FOUND AND OPENSSL_SSL_LIBRARY)\n      # Silence \"deprecated in OpenSSL 3.0\"\n"+
		"      IF((NOT OPENSSL_VERSION) # 3.0 not determined by older cmake\n         OR NOT(OPENSSL_VERSION VERSION_LESS \"3.0.0\"))\n        SET(SSL_DEFINES \"-DOPENSSL_API_COMPAT=0x10100000L\")\n      ENDIF()\n")
	silences := commit()
	repo, _ := git.PlainOpen(dir)
	b := &Builder{Repo: repo}
	for _, c := range []struct {
		commit, want, not string
	}{{refuses, "-DWITH_SSL=bundled", "-DWITH_SSL=system"}, {takes, "-DWITH_SSL=system", "-DWITH_SSL=bundled"}, {silences, "-DWITH_SSL=system", "-DWITH_SSL=bundled"}} {
		r, err := b.Resolve(c.commit)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(r.Args, c.want) || slices.Contains(r.Args, c.not) {
			t.Errorf("%s (NoOpenSSL3 %v): args %q, want %s and not %s", r.Tree, r.Tree.NoOpenSSL3, r.Args, c.want, c.not)
		}
	}
}
