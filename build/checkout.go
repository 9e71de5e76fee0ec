package build

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/go-git/go-billy/v5"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/perfbisect/perfbisect/internal/faultpoint"
	"github.com/perfbisect/perfbisect/internal/gitcat"
)

// manifestFile records, inside a scratch source directory, which blob each path
// holds, so the next checkout rewrites only the files that changed.
const manifestFile = ".perfbisect-manifest.json"

type manifest struct {
	Commit string            `json:"commit"`
	Files  map[string]string `json:"files"` // path -> blob hash + mode
	// Stamps is each file's size and mtime as written: a file whose stamp
	// changed since (an in-source build wrote to it) is written again.
	Stamps map[string]string `json:"stamps,omitempty"`
}

// stamp is the size and modification time of the file at p ("" when it
// cannot be read).
func stamp(p string) string {
	fi, err := os.Lstat(p)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%d %d %v", fi.Size(), fi.ModTime().UnixNano(), fi.Mode())
}

// writeManifest replaces dir's manifest with m, never through a symlink that
// stands in its place.
func writeManifest(dir string, m manifest) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	p := filepath.Join(dir, manifestFile)
	_ = os.Remove(p)
	return os.WriteFile(p, b, 0o644)
}

// Checkout writes the tree of commit from the git repository at repo into dir, a
// scratch directory owned by perfbisect (created if missing). It never touches the
// repository's work tree, index or HEAD. Reusing dir across revisions rewrites only
// the files whose content or mode changed and deletes files that are gone, so
// unchanged files keep their timestamps and an incremental build recompiles only
// what changed. Submodules are checked out the same way, at the commit the tree
// records, from the repository's .git/modules/<name> (or the user's checked-out
// submodule); nothing is fetched. A gitlink that .gitmodules does not name is
// left an empty directory, as git does. Errors: a submodule whose repository or
// commit is not there (fetch it first: git submodule update --init). It
// returns the number of files written, submodules' included.
func Checkout(repo *git.Repository, commit string, dir string) (int, error) {
	var gitDir, workTree string
	// A filesystem storage, go-git's or one that reads objects through git
	// cat-file (bisect.OpenRepo).
	if fs, ok := repo.Storer.(interface{ Filesystem() billy.Filesystem }); ok {
		gitDir = fs.Filesystem().Root()
	}
	if wt, err := repo.Worktree(); err == nil {
		workTree = wt.Filesystem.Root()
	}
	return checkout(repo, gitDir, workTree, commit, dir)
}

// checkout is Checkout of the repository whose git directory is gitDir (for
// its submodules' repositories under gitDir/modules) and whose work tree, if
// any, is workTree.
func checkout(repo *git.Repository, gitDir, workTree, commit, dir string) (int, error) {
	c, err := repo.CommitObject(plumbing.NewHash(commit))
	if err != nil {
		return 0, fmt.Errorf("checkout %s: %w", commit, err)
	}
	tree, err := c.Tree()
	if err != nil {
		return 0, fmt.Errorf("checkout %s: tree: %w", commit, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, fmt.Errorf("checkout %s: %w", commit, err)
	}
	old := readManifest(dir)
	next, files, submodules, err := treeFiles(tree, commit)
	if err != nil {
		return 0, err
	}
	// Until the new manifest is written the directory is in between.
	if err := writeManifest(dir, inBetween(old, next)); err != nil {
		return 0, fmt.Errorf("checkout %s: %w", commit, err)
	}
	removeGone(dir, old, next)
	written, err := writeFiles(repo, gitDir, commit, dir, files, old, next)
	if err != nil {
		return written, err
	}
	if len(submodules) > 0 {
		n, err := checkoutSubmodules(gitDir, workTree, commit, dir, tree, submodules)
		written += n
		if err != nil {
			return written, err
		}
	}
	if err := writeManifest(dir, next); err != nil {
		return written, fmt.Errorf("checkout %s: %w", commit, err)
	}
	return written, nil
}

// treeFile is a file (or a submodule) of a checked-out tree.
type treeFile struct {
	name  string
	entry object.TreeEntry
}

// treeFiles walks tree: the manifest it checks out as (no stamps yet), its
// files and its submodules.
func treeFiles(tree *object.Tree, commit string) (manifest, []treeFile, []treeFile, error) {
	next := manifest{Commit: commit, Files: map[string]string{}, Stamps: map[string]string{}}
	var files, submodules []treeFile
	walker := object.NewTreeWalker(tree, true, nil)
	defer walker.Close()
	for {
		name, entry, err := walker.Next()
		if errors.Is(err, io.EOF) {
			return next, files, submodules, nil
		}
		if err != nil {
			return next, nil, nil, fmt.Errorf("checkout %s: walk tree: %w", commit, err)
		}
		if entry.Mode == filemode.Submodule {
			next.Files[name] = "submodule " + entry.Hash.String()
			submodules = append(submodules, treeFile{name, entry})
			continue
		}
		if entry.Mode == filemode.Dir || name == manifestFile {
			continue // the tree's own file of the manifest's name is not checked out
		}
		next.Files[name] = entry.Hash.String() + " " + entry.Mode.String()
		files = append(files, treeFile{name, entry})
	}
}

// inBetween is the manifest of a directory between old and next: every path
// of both trees with no content key, so that a checkout that follows an
// interrupted one rewrites every file and deletes every stray.
func inBetween(old, next manifest) manifest {
	dirty := manifest{Commit: "(interrupted)", Files: map[string]string{}}
	for _, m := range []manifest{old, next} {
		for n, key := range m.Files {
			if strings.HasPrefix(key, "submodule ") {
				dirty.Files[n] = "submodule ?" // removed as a directory if it is gone
			} else if _, ok := dirty.Files[n]; !ok {
				dirty.Files[n] = ""
			}
		}
	}
	return dirty
}

// removeGone removes the files of old that next does not have, first: a
// path may turn from a file or a symlink into a directory. As git does, a
// directory left empty goes too (a CMake IF(EXISTS dir) must not see a
// directory the revision removed).
func removeGone(dir string, old, next manifest) {
	for name, key := range old.Files {
		if _, ok := next.Files[name]; ok {
			continue
		}
		if strings.HasPrefix(key, "submodule ") {
			_ = os.RemoveAll(filepath.Join(dir, filepath.FromSlash(name)))
		} else {
			_ = os.Remove(filepath.Join(dir, filepath.FromSlash(name)))
		}
		for d := path.Dir(name); d != "."; d = path.Dir(d) {
			if os.Remove(filepath.Join(dir, filepath.FromSlash(d))) != nil {
				break // not empty, or gone already
			}
		}
	}
}

// writeFiles writes the files whose content or mode changed since old (or
// whose file changed under it: its stamp), setting next's stamps, and
// returns how many it wrote.
func writeFiles(repo *git.Repository, gitDir, commit, dir string, files []treeFile, old, next manifest) (int, error) {
	written := 0
	var blobs gitcat.Blobs // opened at the first file that changed
	for _, f := range files {
		if err := clearPath(dir, f.name); err != nil {
			return written, fmt.Errorf("checkout %s: %s: %w", commit, f.name, err)
		}
		key := next.Files[f.name]
		target := filepath.Join(dir, filepath.FromSlash(f.name))
		if old.Files[f.name] == key {
			if st := stamp(target); st != "" && (old.Stamps[f.name] == "" || old.Stamps[f.name] == st) {
				next.Stamps[f.name] = st
				continue
			}
		}
		if blobs == nil {
			blobs = gitcat.OpenBlobs(repo, gitDir)
			defer blobs.Close()
		}
		faultpoint.Hit("checkout")
		if err := writeEntry(blobs, f.entry.Hash, f.entry.Mode, target); err != nil {
			return written, fmt.Errorf("checkout %s: %s: %w", commit, f.name, err)
		}
		next.Stamps[f.name] = stamp(target)
		written++
	}
	return written, nil
}

// checkoutSubmodules checks out each submodule of tree at its commit, from
// its repository under gitDir/modules (or the work tree's), and returns how
// many files it wrote. A path that is not a configured submodule is left
// empty, as git leaves it.
func checkoutSubmodules(gitDir, workTree, commit, dir string, tree *object.Tree, submodules []treeFile) (int, error) {
	written := 0
	names := submoduleNames(tree)
	for _, sm := range submodules {
		name, ok := names[sm.name]
		target := filepath.Join(dir, filepath.FromSlash(sm.name))
		if err := clearPath(dir, sm.name+"/x"); err != nil {
			return written, fmt.Errorf("checkout %s: submodule %s: %w", commit, sm.name, err)
		}
		if !ok {
			// Not a configured submodule: empty, as git leaves it (also when an
			// earlier revision checked one out there).
			_ = os.RemoveAll(target)
			_ = os.MkdirAll(target, 0o755)
			continue
		}
		sub, subGitDir, err := openSubmodule(gitDir, workTree, name, sm.name)
		if err != nil {
			return written, fmt.Errorf("checkout %s: submodule %s: %w", commit, sm.name, err)
		}
		subWorkTree := ""
		if workTree != "" {
			subWorkTree = filepath.Join(workTree, filepath.FromSlash(sm.name))
		}
		if _, err := sub.CommitObject(sm.entry.Hash); err != nil {
			return written, fmt.Errorf("checkout %s: submodule %s: commit %s is not in %s (fetch it in your repository: git submodule update --init --recursive; perfbisect does not fetch)",
				commit, sm.name, sm.entry.Hash, subGitDir)
		}
		n, err := checkout(sub, subGitDir, subWorkTree, sm.entry.Hash.String(), target)
		written += n
		if err != nil {
			return written, err
		}
	}
	return written, nil
}

// submoduleNames maps each submodule path of tree to its name, from the
// tree's .gitmodules (empty when there is none or it does not parse).
func submoduleNames(tree *object.Tree) map[string]string {
	out := map[string]string{}
	f, err := tree.File(".gitmodules")
	if err != nil {
		return out
	}
	content, err := f.Contents()
	if err != nil {
		return out
	}
	m := config.NewModules()
	if m.Unmarshal([]byte(content)) != nil {
		return out
	}
	for name, sm := range m.Submodules {
		if slices.Contains(strings.Split(name, "/"), "..") {
			continue // git refuses such names too (CVE-2018-11235): never a path out of .git/modules
		}
		out[strings.TrimSuffix(sm.Path, "/")] = name
	}
	return out
}

// openSubmodule opens the repository of submodule name (at path): gitDir/
// modules/<name> as `git submodule update` leaves it, else the user's
// checked-out submodule in the work tree. It returns the repository and its
// git directory.
func openSubmodule(gitDir, workTree, name, path string) (*git.Repository, string, error) {
	var tried []string
	if gitDir != "" {
		d := filepath.Join(gitDir, "modules", filepath.FromSlash(name))
		if st, err := os.Stat(filepath.Join(d, "objects")); err == nil && st.IsDir() {
			r, err := git.PlainOpen(d)
			if err == nil {
				return r, d, nil
			}
			return nil, "", fmt.Errorf("open %s: %w", d, err)
		}
		tried = append(tried, d)
	}
	if workTree != "" {
		d := filepath.Join(workTree, filepath.FromSlash(path))
		if _, err := os.Stat(filepath.Join(d, ".git")); err == nil {
			r, err := git.PlainOpen(d)
			if err == nil {
				gd := filepath.Join(d, ".git")
				if fs, ok := r.Storer.(*filesystem.Storage); ok {
					gd = fs.Filesystem().Root()
				}
				return r, gd, nil
			}
		}
		tried = append(tried, filepath.Join(d, ".git"))
	}
	return nil, "", fmt.Errorf("its repository is not here (looked in %s): run git submodule update --init --recursive in your repository; perfbisect does not fetch", strings.Join(tried, " and "))
}

func readManifest(dir string) manifest {
	var m manifest
	b, err := os.ReadFile(filepath.Join(dir, manifestFile))
	if err == nil {
		_ = json.Unmarshal(b, &m)
	}
	if m.Files == nil {
		m.Files = map[string]string{}
	}
	return m
}

// clearPath makes the way to dir/name safe to write: every parent below dir that
// is not a real directory (a file, or a symlink that would lead the write
// outside the checkout) is removed, and so is a directory standing where the
// file goes.
func clearPath(dir, name string) error {
	parts := strings.Split(name, "/")
	p := dir
	for _, part := range parts[:len(parts)-1] {
		p = filepath.Join(p, part)
		st, err := os.Lstat(p)
		if err != nil {
			break // missing: MkdirAll creates it
		}
		if !st.IsDir() {
			if err := os.Remove(p); err != nil {
				return err
			}
			break
		}
	}
	target := filepath.Join(dir, filepath.FromSlash(name))
	if st, err := os.Lstat(target); err == nil && st.IsDir() {
		return os.RemoveAll(target)
	}
	return nil
}

func writeEntry(blobs gitcat.Blobs, h plumbing.Hash, mode filemode.FileMode, target string) error {
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	_ = os.Remove(target)
	if mode == filemode.Symlink {
		var b bytes.Buffer
		if err := blobs.CopyBlob(h, &b); err != nil {
			return err
		}
		return os.Symlink(strings.TrimRight(b.String(), "\x00"), target)
	}
	perm := os.FileMode(0o644)
	if mode == filemode.Executable {
		perm = 0o755
	}
	f, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	if err := blobs.CopyBlob(h, f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
