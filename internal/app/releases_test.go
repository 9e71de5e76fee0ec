package app

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/build"
)

// TestReleaseChain: the releases a first phase bisects are the tagged
// commits whose tree states the tag's version and whose tarball is there,
// a tarball standing for the newest commit tagged with its version (an
// older v10.0.2 on the commit that raised VERSION is not that server);
// without one, the reason names what is missing.
func TestReleaseChain(t *testing.T) {
	repo, _, g := gitRepo(t, 0)
	at := map[string]string{}
	for i, c := range []struct{ patch, tag string }{
		{"1", "mariadb-10.0.1"}, {"2", ""}, {"2", "v10.0.2"}, {"2", "mariadb-10.0.2"}, {"3", ""}, {"3", "mariadb-10.0.3"}, {"4", "mariadb-10.0.4"},
	} {
		v := "MYSQL_VERSION_MAJOR=10\nMYSQL_VERSION_MINOR=0\nMYSQL_VERSION_PATCH=" + c.patch + "\n"
		if err := os.WriteFile(filepath.Join(repo, "VERSION"), []byte(v+strings.Repeat("#\n", i)), 0o644); err != nil {
			t.Fatal(err)
		}
		g("add", "VERSION")
		g("commit", "-q", "-m", "c"+string(rune('0'+i)))
		at[string(rune('0'+i))] = g("rev-parse", "HEAD")
		if c.tag != "" {
			g("tag", c.tag)
		}
	}
	bins := t.TempDir()
	for _, v := range []string{"10.0.1", "10.0.2", "10.0.4"} {
		if err := os.WriteFile(filepath.Join(bins, "mariadb-"+v+"-linux-x86_64.tar.gz"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := build.OpenBinaries(bins)
	if err != nil {
		t.Skip(err) // another architecture
	}
	r, err := bisect.OpenRepo(repo)
	if err != nil {
		t.Fatal(err)
	}
	su := &Setup{Repo: r, RepoRoot: repo, Build: BuildSettings{Binaries: b}}
	chain := func(good, bad string) ([]string, string) {
		all, err := bisect.Range(r, at[good], at[bad])
		if err != nil {
			t.Fatal(err)
		}
		c, sides, why, err := releaseChain(su, at[good], at[bad], all)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, h := range c {
			names = append(names, sides[h].Name)
		}
		return names, why
	}
	if names, why := chain("0", "6"); !slices.Equal(names, []string{"mariadb-10.0.1", "mariadb-10.0.2", "mariadb-10.0.4"}) {
		t.Errorf("chain %v (%s), want 10.0.1, mariadb-10.0.2 (not v10.0.2), 10.0.4", names, why)
	}
	for _, c := range []struct{ good, bad, want string }{
		{"1", "6", "good " + at["1"][:10] + " has no version tag; 1 release(s) between them have tarballs (mariadb-10.0.2)"},
		{"3", "6", "none of the 1 release(s) between good and bad (mariadb-10.0.3) has a tarball"},
		{"2", "6", "good v10.0.2 at " + at["2"][:10] + " names MariaDB 10.0.2, whose tarball stands for the newer mariadb-10.0.2 at " + at["3"][:10]},
		{"0", "1", "bad " + at["1"][:10] + " has no version tag"},
		{"3", "4", "bad " + at["4"][:10] + " has no version tag"},
	} {
		if names, why := chain(c.good, c.bad); names != nil || !strings.Contains(why, c.want) {
			t.Errorf("good c%s bad c%s: chain %v, why %q; want none, saying %q", c.good, c.bad, names, why, c.want)
		}
	}
	if _, why := chain("0", "3"); !strings.Contains(why, "no release lies between") && !strings.Contains(why, "none of the 1 release(s) between good and bad (v10.0.2)") {
		t.Errorf("good 10.0.1, bad 10.0.2: %q", why)
	}
}
