package bisect

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	version "github.com/hashicorp/go-version"
)

// ErrUsage is wrapped by every error that is the user's input's fault (a missing
// repository, an unknown ref, good not an ancestor of bad): exit code 2.
var ErrUsage = errors.New("usage")

// OpenRepo opens the git repository at dir (or the one containing it). A
// missing directory or one that is not in a git repository is an ErrUsage error.
func OpenRepo(dir string) (*git.Repository, error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("%w: repository %s: %v (pass the server's source tree with --repo)", ErrUsage, dir, err)
	}
	r, err := git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{DetectDotGit: true})
	if err != nil {
		abs, _ := filepath.Abs(dir)
		return nil, fmt.Errorf("%w: repository %s: %v (pass the server's source tree with --repo)", ErrUsage, abs, err)
	}
	return r, nil
}

// versionTagPrefixes are the tag spellings of a bare version in the trees of the
// field: MariaDB mariadb-10.0.22, MySQL mysql-5.7.22, Percona
// Percona-Server-5.7.22-22, and plain v10.0.22 / 10.0.22.
var versionTagPrefixes = []string{"mariadb-", "mysql-", "Percona-Server-", "v", ""}

// Resolve turns a ref into a full commit hash: anything git accepts (tag, branch,
// hash, HEAD~3), or a bare version such as 10.0.22 matched against the
// repository's tags (mariadb-10.0.22, mysql-10.0.22, Percona-Server-10.0.22-NN,
// v10.0.22). An unknown ref is an ErrUsage error that lists the nearest tags.
func Resolve(r *git.Repository, ref string) (string, error) {
	if h, err := r.ResolveRevision(plumbing.Revision(ref)); err == nil {
		c, err := r.CommitObject(*h)
		if err == nil {
			return c.Hash.String(), nil
		}
		// An annotated tag resolves to the tag object in some go-git versions.
		if t, terr := r.TagObject(*h); terr == nil {
			if c, cerr := t.Commit(); cerr == nil {
				return c.Hash.String(), nil
			}
		}
		return "", fmt.Errorf("%w: ref %q is not a commit: %v", ErrUsage, ref, err)
	}
	tags, err := tagNames(r)
	if err != nil {
		return "", err
	}
	if v, err := version.NewVersion(ref); err == nil {
		var matches []string
		for _, t := range tags {
			for _, p := range versionTagPrefixes {
				rest, ok := strings.CutPrefix(t, p)
				if !ok {
					continue
				}
				if rest == ref || (p == "Percona-Server-" && strings.HasPrefix(rest, ref+"-")) {
					matches = append(matches, t)
					break
				}
				if tv, err := version.NewVersion(rest); err == nil && tv.Equal(v) && rest == v.Original() {
					matches = append(matches, t)
					break
				}
			}
		}
		switch len(matches) {
		case 1:
			return Resolve(r, matches[0])
		case 0:
		default:
			return "", fmt.Errorf("%w: version %s matches several tags: %s (pass the tag itself)", ErrUsage, ref, strings.Join(matches, ", "))
		}
	}
	return "", fmt.Errorf("%w: unknown ref %q (not a tag, branch or commit%s)", ErrUsage, ref, nearestTags(tags, ref))
}

func tagNames(r *git.Repository) ([]string, error) {
	it, err := r.Tags()
	if err != nil {
		return nil, err
	}
	var out []string
	_ = it.ForEach(func(ref *plumbing.Reference) error {
		out = append(out, ref.Name().Short())
		return nil
	})
	sort.Strings(out)
	return out, nil
}

// nearestTags names up to 5 tags that share the longest prefix with ref.
func nearestTags(tags []string, ref string) string {
	if len(tags) == 0 {
		return "; the repository has no tags"
	}
	type scored struct {
		tag   string
		score int
	}
	var ss []scored
	for _, t := range tags {
		n := 0
		for n < len(t) && n < len(ref) && t[n] == ref[n] {
			n++
		}
		if strings.Contains(t, ref) {
			n += len(ref)
		}
		ss = append(ss, scored{t, n})
	}
	sort.SliceStable(ss, func(i, j int) bool { return ss[i].score > ss[j].score })
	var names []string
	for i := 0; i < len(ss) && i < 5; i++ {
		names = append(names, ss[i].tag)
	}
	return "; nearest tags: " + strings.Join(names, ", ")
}

// Range lists the commits that are ancestors of bad (inclusive) and not
// ancestors of good (inclusive), with parent links, for NewSearch. good must be
// an ancestor of bad; otherwise it is an ErrUsage error that says which way round
// the two are.
func Range(r *git.Repository, good, bad string) ([]Commit, error) {
	gc, err := r.CommitObject(plumbing.NewHash(good))
	if err != nil {
		return nil, fmt.Errorf("good %s: %w", good, err)
	}
	bc, err := r.CommitObject(plumbing.NewHash(bad))
	if err != nil {
		return nil, fmt.Errorf("bad %s: %w", bad, err)
	}
	if good == bad {
		return nil, fmt.Errorf("%w: good and bad are the same commit %.10s", ErrUsage, good)
	}
	isAnc, err := gc.IsAncestor(bc)
	if err != nil {
		return nil, shallowHint(r, err)
	}
	if !isAnc {
		if rev, _ := bc.IsAncestor(gc); rev {
			return nil, fmt.Errorf("%w: good %.10s is not an ancestor of bad %.10s: bad is older than good; swap --good and --bad (or look for an improvement)", ErrUsage, good, bad)
		}
		return nil, fmt.Errorf("%w: good %.10s is not an ancestor of bad %.10s (they are on different branches)", ErrUsage, good, bad)
	}
	goodAnc := map[plumbing.Hash]bool{}
	it := object.NewCommitPreorderIter(gc, nil, nil)
	if err := it.ForEach(func(c *object.Commit) error {
		goodAnc[c.Hash] = true
		return nil
	}); err != nil {
		return nil, fmt.Errorf("walk ancestors of good %.10s: %w", good, shallowHint(r, err))
	}
	var out []Commit
	it2 := object.NewCommitPreorderIter(bc, goodAnc, nil)
	if err := it2.ForEach(func(c *object.Commit) error {
		if goodAnc[c.Hash] {
			return nil
		}
		var parents []string
		for _, p := range c.ParentHashes {
			parents = append(parents, p.String())
		}
		subject, _, _ := strings.Cut(c.Message, "\n")
		out = append(out, Commit{Hash: c.Hash.String(), Subject: subject, Parents: parents})
		return nil
	}); err != nil {
		return nil, fmt.Errorf("walk %.10s..%.10s: %w", good, bad, shallowHint(r, err))
	}
	return out, nil
}

// Subject returns the first line of the commit message of hash ("" if unknown).
func Subject(r *git.Repository, hash string) string {
	c, err := r.CommitObject(plumbing.NewHash(hash))
	if err != nil {
		return ""
	}
	s, _, _ := strings.Cut(c.Message, "\n")
	return s
}

// shallowHint turns a missing object in a shallow clone into a usage error that
// says how to get the history.
func shallowHint(r *git.Repository, err error) error {
	if sh, serr := r.Storer.Shallow(); serr == nil && len(sh) > 0 {
		return fmt.Errorf("%w: the repository is a shallow clone and lacks the history between good and bad (%v): run git fetch --unshallow", ErrUsage, err)
	}
	return err
}
