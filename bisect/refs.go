package bisect

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-billy/v5/osfs"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage"
	"github.com/go-git/go-git/v5/storage/filesystem"
	version "github.com/hashicorp/go-version"

	"github.com/perfbisect/perfbisect/internal/gitcat"
	"github.com/perfbisect/perfbisect/internal/usage"
)

// ErrUsage is what every error that is the user's input's fault (a missing
// repository, an unknown ref, good not an ancestor of bad) is (errors.Is):
// usage.Err, which the command line exits 2 for.
var ErrUsage = usage.Err

// Usagef is usage.Errorf: an error of the user's input, its text the
// message alone; settings named {name} (see package usage).
func Usagef(format string, args ...any) error { return usage.Errorf(format, args...) }

// OpenRepo opens the git repository at dir (or the one containing it). A
// missing directory or one that is not in a git repository is an ErrUsage error.
func OpenRepo(dir string) (*git.Repository, error) {
	abs, _ := filepath.Abs(dir)
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, Usagef("repository %s: no such directory (pass the server's git source tree with {repo}, or run perfbisect in it)", abs)
	case err != nil:
		return nil, Usagef("repository %s: %v (pass the server's git source tree with {repo})", abs, err)
	case !st.IsDir():
		return nil, Usagef("repository %s: not a directory (pass the server's git source tree with {repo})", abs)
	}
	// EnableDotGitCommonDir: a linked worktree (git worktree add) keeps its
	// objects and refs in the main repository.
	r, err := git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{DetectDotGit: true, EnableDotGitCommonDir: true})
	switch {
	case errors.Is(err, git.ErrRepositoryNotExists) && looksLikeServerTree(dir):
		return nil, Usagef("repository %s: a server source tree without git history (no .git here or above): perfbisect checks out revisions from git; clone the server's repository, or make one from the release tarballs (git init, a commit and a tag per release: the README's \"A tree without git history\")", abs)
	case errors.Is(err, git.ErrRepositoryNotExists):
		return nil, Usagef("repository %s: not a git repository (no .git here or above): pass the server's git source tree with {repo}, or run perfbisect in it", abs)
	case err != nil:
		return nil, Usagef("repository %s: %v (pass the server's git source tree with {repo})", abs, err)
	}
	// The same git directory with bounded caches: go-git's default object
	// cache kept a checkout's memory resident for the whole build that
	// followed (docs/measurements.md).
	if fs, ok := r.Storer.(*filesystem.Storage); ok {
		// AlternatesFS: a clone that borrows objects (git clone --shared
		// or --reference) names the lender's objects by absolute path,
		// which go-git resolves from the root, not inside the git
		// directory.
		st := filesystem.NewStorageWithOptions(fs.Filesystem(), cache.NewObjectLRU(objectCacheSize),
			filesystem.Options{LargeObjectThreshold: largeObject, AlternatesFS: osfs.New("/")})
		var wt billy.Filesystem
		if w, err := r.Worktree(); err == nil {
			wt = w.Filesystem
		}
		var storer storage.Storer = st
		// git reads the objects of a large history, and those of a clone
		// that borrows them (git's own rules for alternates: relative
		// paths, chains), exactly as git itself would.
		if dir := fs.Filesystem().Root(); gitDirOf(r) != "" && (gitcat.PackedObjects(dir) >= CatFileObjects || borrowsObjects(dir)) {
			storer = gitcat.NewStorage(st, fs.Filesystem().Root(), largeObject)
		}
		if bounded, err := git.Open(storer, wt); err == nil {
			r = bounded
		}
	}
	return r, nil
}

// borrowsObjects reports whether the git directory dir reads objects of
// other repositories (objects/info/alternates: git clone --shared,
// --reference).
func borrowsObjects(dir string) bool {
	fi, err := os.Stat(filepath.Join(dir, "objects", "info", "alternates"))
	return err == nil && fi.Size() > 0
}

// looksLikeServerTree reports whether dir holds a MySQL-family server's
// source (a CMakeLists.txt and an sql/ directory), as an unpacked release
// tarball does.
func looksLikeServerTree(dir string) bool {
	_, cm := os.Stat(filepath.Join(dir, "CMakeLists.txt"))
	st, sq := os.Stat(filepath.Join(dir, "sql"))
	return cm == nil && sq == nil && st.IsDir()
}

// GitDir is the git directory of a repository opened from the filesystem
// (OpenRepo, git.PlainOpen), "" for one in memory.
func GitDir(r *git.Repository) string {
	if fs, ok := r.Storer.(interface{ Filesystem() billy.Filesystem }); ok {
		return fs.Filesystem().Root()
	}
	return ""
}

// objectCacheSize bounds go-git's cache of decoded objects per repository;
// objects larger than largeObject are streamed from the pack, not held.
const (
	objectCacheSize = 16 * cache.MiByte
	largeObject     = 1 << 20
)

// versionTagPrefixes are the tag spellings of a bare version in the trees of the
// field: MariaDB mariadb-10.0.22, MySQL mysql-5.7.22, Percona
// Percona-Server-5.7.22-22, and plain v10.0.22 / 10.0.22.
var versionTagPrefixes = []string{"mariadb-", "mysql-", "Percona-Server-", "v", ""}

// Resolve turns a ref into a full commit hash: anything git accepts (tag,
// branch, hash, HEAD~3; an annotated tag gives the commit it tags), or a bare
// version such as 10.0.22 matched against the repository's tags as the trees
// of the field spell them: mariadb-10.0.22, mysql-5.7.22,
// Percona-Server-5.7.22-NN (5.7.22-NN matches too), v10.0.22 or 10.0.22.
// Errors wrap ErrUsage: an unknown ref or a version with no tag (the message
// lists the nearest tags, by version when ref is a version), and a version
// that matches tags on different commits (the message lists them; pass the
// tag itself).
//
// A name is a ref before it is an abbreviated hash, as in git: with the git
// command installed, git rev-parse resolves it; without, a tag, branch or
// remote branch of that name comes first (go-git alone would take "bad",
// which is hex, for any commit whose hash starts with bad: in a
// 200,000-commit history there are about fifty).
func Resolve(r *git.Repository, ref string) (string, error) {
	if dir := gitDirOf(r); dir != "" && !strings.HasPrefix(ref, "-") {
		cmd := exec.Command("git", "--git-dir", dir, "rev-parse", "--verify", "--quiet", "--end-of-options", ref+"^{commit}")
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "LC_ALL=C")
		if out, err := cmd.Output(); err == nil {
			if h := strings.TrimSpace(string(out)); len(h) == 40 {
				return h, nil
			}
		}
	}
	for _, name := range []plumbing.ReferenceName{plumbing.NewTagReferenceName(ref), plumbing.NewBranchReferenceName(ref), plumbing.ReferenceName("refs/remotes/" + ref)} {
		if rf, err := r.Reference(name, true); err == nil {
			if h, err := peelToCommit(r, rf.Hash()); err == nil {
				return h, nil
			}
		}
	}
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
		return "", Usagef("ref %q is not a commit: %v", ref, err)
	}
	if base, n, ok := ancestorSuffix(ref); ok {
		if err := pastRoot(r, base, n, ref); err != nil {
			return "", err
		}
	}
	tags, err := tagNames(r)
	if err != nil {
		return "", err
	}
	if _, err := version.NewVersion(ref); err == nil {
		var matches []string
		byCommit := map[string]bool{}
		var hash string
		for _, t := range tags {
			if !versionTagMatches(t, ref) {
				continue
			}
			h, err := Resolve(r, t)
			if err != nil {
				return "", err
			}
			matches = append(matches, t)
			byCommit[h] = true
			hash = h
		}
		switch len(byCommit) {
		case 1:
			return hash, nil
		case 0:
		default:
			return "", Usagef("version %s matches tags on different commits: %s (pass the tag itself)", ref, strings.Join(matches, ", "))
		}
	}
	if v, err := version.NewVersion(ref); err == nil {
		if k := strings.Count(ref, ".") + 1; k <= 2 {
			if series := seriesTags(tags, v.Segments64()[:k]); len(series) > 0 {
				return "", Usagef("%s is a release series, not a release: name one of its tags (%s)", ref, strings.Join(series, ", "))
			}
		}
		var tried []string
		for _, p := range versionTagPrefixes {
			t := p + ref
			if p == "Percona-Server-" {
				t += "-NN"
			}
			tried = append(tried, t)
		}
		return "", Usagef("%q was read as a version and matches no tag (tried %s%s)", ref, strings.Join(tried, ", "), nearestTags(tags, ref))
	}
	return "", Usagef("unknown ref %q (not a tag, branch or commit%s)", ref, nearestTags(tags, ref))
}

// ancestorSuffix splits a ref that walks back from another one: "HEAD~99"
// is ("HEAD", 99), "v1^" is ("v1", 1), "x^^" is ("x", 2); ok is false for any
// other ref (and for ^2-style parent numbers, which are not walks).
func ancestorSuffix(ref string) (base string, n int, ok bool) {
	i := strings.LastIndexAny(ref, "~^")
	if i <= 0 {
		return "", 0, false
	}
	base, tail := ref[:i], ref[i+1:]
	switch {
	case ref[i] == '~' && tail == "":
		n = 1
	case ref[i] == '~':
		if _, err := fmt.Sscanf(tail, "%d", &n); err != nil || fmt.Sprint(n) != tail || n < 1 {
			return "", 0, false
		}
	case tail == "":
		n = 1
		for strings.HasSuffix(base, "^") {
			base, n = base[:len(base)-1], n+1
		}
	default:
		return "", 0, false
	}
	if strings.ContainsAny(base, "~^") {
		return "", 0, false // a walk of a walk: left to git's own message
	}
	return base, n, true
}

// pastRoot returns the error for ref = base walked back n first parents when
// base resolves and its first-parent line is shorter than n ("HEAD~99 runs
// past the root: HEAD has 12 commits before it ..."), and nil otherwise.
func pastRoot(r *git.Repository, base string, n int, ref string) error {
	hs, err := Resolve(r, base) // base has no ~ or ^: no second walk
	if err != nil {
		return nil
	}
	c, err := r.CommitObject(plumbing.NewHash(hs))
	if err != nil {
		return nil
	}
	depth := 0
	for depth < n && c.NumParents() > 0 {
		p, err := c.Parent(0)
		if err != nil {
			return nil // a shallow clone's boundary: git's own words below
		}
		c, depth = p, depth+1
	}
	if depth >= n {
		return nil
	}
	return Usagef("%s runs past the root: %s has %d commits before it on its first-parent line (the root is %.10s)", ref, base, depth, c.Hash)
}

// seriesTags are the tags of the release series whose leading version
// numbers are want (10, 11: mariadb-10.11.5, ...), oldest first, at most 8
// (the first 4 and the last 4 when there are more).
func seriesTags(tags []string, want []int64) []string {
	type tv struct {
		tag string
		v   *version.Version
	}
	var in []tv
	for _, t := range tags {
		x := tagVersion(t)
		if x == nil {
			continue
		}
		seg := x.Segments64()
		if len(seg) < len(want) {
			continue
		}
		match := true
		for i := range want {
			if seg[i] != want[i] {
				match = false
			}
		}
		if match {
			in = append(in, tv{t, x})
		}
	}
	sort.SliceStable(in, func(i, j int) bool { return in[i].v.LessThan(in[j].v) })
	var out []string
	for i, x := range in {
		if len(in) > 8 && i == 4 {
			out = append(out, "...")
		}
		if len(in) <= 8 || i < 4 || i >= len(in)-4 {
			out = append(out, x.tag)
		}
	}
	return out
}

// peelToCommit is the commit h names: h itself, or what an annotated tag
// (chain) points at.
func peelToCommit(r *git.Repository, h plumbing.Hash) (string, error) {
	for range 10 {
		if c, err := r.CommitObject(h); err == nil {
			return c.Hash.String(), nil
		}
		t, err := r.TagObject(h)
		if err != nil {
			return "", err
		}
		h = t.Target
	}
	return "", fmt.Errorf("tag chain too long at %s", h)
}

// versionTagMatches reports whether tag spells the bare version ref with one
// of versionTagPrefixes (Percona's tags add a build suffix: -NN).
func versionTagMatches(tag, ref string) bool {
	for _, p := range versionTagPrefixes {
		rest, ok := strings.CutPrefix(tag, p)
		if !ok {
			continue
		}
		if rest == ref || (p == "Percona-Server-" && strings.HasPrefix(rest, ref+"-")) {
			return true
		}
	}
	return false
}

// tagVersion is the version a tag names (mariadb-10.0.22 → 10.0.22,
// Percona-Server-5.7.22-22 → 5.7.22), or nil.
func tagVersion(tag string) *version.Version {
	for _, p := range versionTagPrefixes {
		rest, ok := strings.CutPrefix(tag, p)
		if !ok {
			continue
		}
		if p == "Percona-Server-" {
			if i := strings.LastIndex(rest, "-"); i > 0 {
				rest = rest[:i]
			}
		}
		if v, err := version.NewVersion(rest); err == nil {
			return v
		}
	}
	return nil
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

// nearestTags names up to 5 tags near ref: when ref is a version (bare or
// spelled like a tag), the tags of the nearest versions first (most leading numbers in common, then the
// smallest gap in the first number that differs); otherwise, and after those,
// the tags that share the longest prefix with ref or contain it.
func nearestTags(tags []string, ref string) string {
	if len(tags) == 0 {
		return "; the repository has no tags"
	}
	type scored struct {
		tag       string
		common    int // leading version numbers in common, -1 if not a version
		gap       int64
		prefixLen int
	}
	rv := tagVersion(ref) // 10.0.24, or a tag's spelling: mariadb-10.0.24
	var ss []scored
	for _, t := range tags {
		sc := scored{tag: t, common: -1}
		if tv := tagVersion(t); rv != nil && tv != nil {
			a, b := rv.Segments64(), tv.Segments64()
			sc.common = 0
			for sc.common < len(a) && sc.common < len(b) && a[sc.common] == b[sc.common] {
				sc.common++
			}
			if sc.common < len(a) && sc.common < len(b) {
				sc.gap = a[sc.common] - b[sc.common]
				if sc.gap < 0 {
					sc.gap = -sc.gap
				}
			}
		}
		for sc.prefixLen < len(t) && sc.prefixLen < len(ref) && t[sc.prefixLen] == ref[sc.prefixLen] {
			sc.prefixLen++
		}
		if strings.Contains(t, ref) {
			sc.prefixLen += len(ref)
		}
		ss = append(ss, sc)
	}
	sort.SliceStable(ss, func(i, j int) bool {
		a, b := ss[i], ss[j]
		if a.common != b.common {
			return a.common > b.common
		}
		if a.common >= 0 && a.gap != b.gap {
			return a.gap < b.gap
		}
		return a.prefixLen > b.prefixLen
	})
	var names []string
	for i := 0; i < len(ss) && i < 5; i++ {
		names = append(names, ss[i].tag)
	}
	return "; nearest tags: " + strings.Join(names, ", ")
}

// Range lists the commits that are ancestors of bad (inclusive) and not
// ancestors of good (inclusive), with parent links and committer times, for
// NewSearchOptions (which narrows them to the first-parent
// chain itself). good and bad are full hashes (see Resolve). good must be
// an ancestor of bad; otherwise it is an ErrUsage error that says which way round
// the two are.
//
// With the git command installed it asks git (git merge-base --is-ancestor,
// git log good..bad), which reads a 200,000-commit history's commit-graph in
// a fraction of the time go-git's walk of every ancestor of good takes
// (scripts/history-scale prints both) and lists the range of a shallow clone
// that holds it; the commits are then put in the order go-git's walk gives
// (rangeOrder), so that a session resumes the same whichever path listed
// them. Without git, or when git fails, go-git walks the history.
func Range(r *git.Repository, good, bad string) ([]Commit, error) {
	if good != bad {
		if dir := gitDirOf(r); dir != "" {
			if out, err := rangeGit(dir, good, bad); err == nil {
				return out, nil
			} else if errors.Is(err, ErrUsage) {
				return nil, err
			}
		}
	}
	return rangeGoGit(r, good, bad)
}

// rangeGoGit is Range by go-git's commit walks.
func rangeGoGit(r *git.Repository, good, bad string) ([]Commit, error) {
	gc, err := r.CommitObject(plumbing.NewHash(good))
	if err != nil {
		return nil, fmt.Errorf("good %s: %w", good, err)
	}
	bc, err := r.CommitObject(plumbing.NewHash(bad))
	if err != nil {
		return nil, fmt.Errorf("bad %s: %w", bad, err)
	}
	if good == bad {
		return nil, Usagef("good and bad are the same commit %.10s", good)
	}
	isAnc, err := gc.IsAncestor(bc)
	if err != nil {
		return nil, shallowHint(r, err)
	}
	if !isAnc {
		if rev, _ := bc.IsAncestor(gc); rev {
			return nil, Usagef("good %.10s is not an ancestor of bad %.10s: bad is older than good; swap {good} and {bad} (or look for an improvement)", good, bad)
		}
		return nil, Usagef("good %.10s is not an ancestor of bad %.10s (they are on different branches)", good, bad)
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
		out = append(out, Commit{Hash: c.Hash.String(), Subject: subject, Parents: parents, Time: c.Committer.When.Unix()})
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
// gitDirOf is the git directory of a repository opened from the
// filesystem, or "" (a repository in memory, or no git command).
func gitDirOf(r *git.Repository) string {
	if _, err := exec.LookPath("git"); err != nil {
		return ""
	}
	return GitDir(r)
}

// rangeGit is Range by the git command on the git directory dir. Errors
// wrapping ErrUsage are the user's (good not an ancestor of bad); others
// mean "ask go-git instead".
func rangeGit(dir, good, bad string) ([]Commit, error) {
	git := func(args ...string) *exec.Cmd {
		cmd := exec.Command("git", append([]string{"--git-dir", dir, "-c", "log.showSignature=false"}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "LC_ALL=C")
		return cmd
	}
	err := git("merge-base", "--is-ancestor", good, bad).Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee) && ee.ExitCode() == 1:
		if git("merge-base", "--is-ancestor", bad, good).Run() == nil {
			return nil, Usagef("good %.10s is not an ancestor of bad %.10s: bad is older than good; swap {good} and {bad} (or look for an improvement)", good, bad)
		}
		return nil, Usagef("good %.10s is not an ancestor of bad %.10s (they are on different branches)", good, bad)
	case err != nil:
		return nil, err
	}
	// One NUL-terminated record per commit; the raw message (%B), of which
	// the subject is the first line, as go-git's walk takes it (git's %s
	// would join a first paragraph's lines).
	out, err := git("log", "-z", "--no-decorate", "--no-color", "--format=%H%x01%P%x01%ct%x01%B", good+".."+bad).Output()
	if err != nil {
		return nil, err
	}
	byHash := map[string]Commit{}
	for _, rec := range strings.Split(string(out), "\x00") {
		if rec == "" {
			continue
		}
		f := strings.SplitN(rec, "\x01", 4)
		if len(f) != 4 {
			return nil, fmt.Errorf("git log: record %.80q", rec)
		}
		var t int64
		if _, err := fmt.Sscan(f[2], &t); err != nil {
			return nil, fmt.Errorf("git log: time in %.80q", rec)
		}
		subject, _, _ := strings.Cut(f[3], "\n")
		var parents []string // nil for a root, as go-git's walk gives
		if f[1] != "" {
			parents = strings.Fields(f[1])
		}
		byHash[f[0]] = Commit{Hash: f[0], Parents: parents, Time: t, Subject: subject}
	}
	if _, ok := byHash[bad]; !ok {
		return nil, fmt.Errorf("git log %.10s..%.10s: bad is not listed", good, bad)
	}
	return rangeOrder(byHash, bad), nil
}

// rangeOrder lists the commits of a range (by hash) in the order of
// go-git's preorder walk from bad (object.NewCommitPreorderIter): each
// commit, then its unvisited parents' walks in parent order, a parent
// outside the range (an ancestor of good) left out.
func rangeOrder(byHash map[string]Commit, bad string) []Commit {
	type parents struct {
		hs []string
		i  int
	}
	seen := map[string]bool{}
	var stack []*parents
	out := make([]Commit, 0, len(byHash))
	next := bad
	for {
		h := next
		next = ""
		if h == "" {
			if len(stack) == 0 {
				return out
			}
			top := stack[len(stack)-1]
			if top.i >= len(top.hs) {
				stack = stack[:len(stack)-1]
				continue
			}
			h = top.hs[top.i]
			top.i++
		}
		c, in := byHash[h]
		if seen[h] || !in {
			continue
		}
		seen[h] = true
		out = append(out, c)
		if len(c.Parents) > 0 {
			var unseen []string
			for _, p := range c.Parents {
				if !seen[p] {
					unseen = append(unseen, p)
				}
			}
			stack = append(stack, &parents{hs: unseen})
		}
	}
}

func shallowHint(r *git.Repository, err error) error {
	if sh, serr := r.Storer.Shallow(); serr == nil && len(sh) > 0 {
		return Usagef("the repository is a shallow clone and lacks the history between good and bad (%v): run git fetch --unshallow", err)
	}
	return err
}

// A Release is a commit a version tag names: a release of the tree.
type Release struct {
	Tag     string // as in the repository: mariadb-10.0.22
	Version string // as the tag spells it: 10.0.22; Percona's with its release, 5.7.44-48
}

// Releases returns the version tags (versionTagPrefixes' spellings, a
// version after the prefix) at the given commits: commit -> its release.
// A commit with several gets the highest version. Errors: the tags cannot
// be read.
func Releases(r *git.Repository, commits []string) (map[string]Release, error) {
	want := map[string]bool{}
	for _, c := range commits {
		want[c] = true
	}
	it, err := r.Tags()
	if err != nil {
		return nil, err
	}
	out := map[string]Release{}
	err = it.ForEach(func(ref *plumbing.Reference) error {
		tag := ref.Name().Short()
		spelled, ok := tagRelease(tag)
		if !ok {
			return nil
		}
		commit, err := peelToCommit(r, ref.Hash())
		if err != nil || !want[commit] {
			return nil // a tag of a tree or a blob, or outside the commits asked
		}
		if old, had := out[commit]; had {
			ov, nv := tagVersion(old.Tag), tagVersion(tag)
			if nv == nil || ov != nil && !nv.GreaterThan(ov) {
				return nil
			}
		}
		out[commit] = Release{Tag: tag, Version: spelled}
		return nil
	})
	return out, err
}

// tagRelease is the version a tag spells after its prefix (mariadb-10.0.22
// -> 10.0.22, Percona-Server-5.7.44-48 -> 5.7.44-48, v10.0.22 -> 10.0.22);
// ok is false for a tag that names no version of three numbers.
func tagRelease(tag string) (string, bool) {
	for _, p := range versionTagPrefixes {
		rest, ok := strings.CutPrefix(tag, p)
		if !ok {
			continue
		}
		if releaseSpelling.MatchString(rest) && (p == "Percona-Server-" || !strings.Contains(rest, "-")) {
			return rest, true
		}
	}
	return "", false
}

// releaseSpelling is a release's version: three numbers, and Percona's
// release number after a dash.
var releaseSpelling = regexp.MustCompile(`^\d+\.\d+\.\d+(-\d+(\.\d+)?)?$`)
