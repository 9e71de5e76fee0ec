package app

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5"

	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/bisect/measure"
	"github.com/perfbisect/perfbisect/build"
	"github.com/perfbisect/perfbisect/serverctl"
)

// sideForm is how compare's sides are written, for refusals.
const sideForm = "perfbisect compare SIDE SIDE [SIDE...], a side being a revision of {repo} (HEAD, mariadb-10.0.23), " +
	"DIR:REV (a revision of the git tree DIR) or the directory of an installed server (/usr); " +
	"{my-cnf} once for every side, or once per side in order"

// A Side is one side of a comparison, resolved: the subject the session
// measures it by (Key), what it stands for (Spec), and how it was written.
type Side struct {
	Arg  string       // as typed
	Key  string       // the session's subject: the commit of a plain side, else a digest
	Spec measure.Side // what is built or found, and its option file
	// Repo is the revision's repository (nil for an installed server);
	// Tree its root, "" for --repo's own.
	Repo *git.Repository
	Tree string
	// Install is an installed server's (nil for a revision).
	Install *serverctl.Install
}

// Plain reports whether the side is a revision of --repo under the shared
// option file: measured and stored as a commit, as a bisection's are.
func (s Side) Plain() bool {
	return s.Tree == "" && s.Install == nil && s.Key == s.Spec.Commit
}

// Describe names the side in one line, "ARG: WHAT, OPTION FILE": the
// argument, what it resolved to, and its option file. The identity keeps
// it, and report --list reads the argument and the file back from it.
func (s Side) Describe() string {
	what := sideWhat(s)
	if s.Install != nil {
		what += " (" + s.Install.Server + ")"
	}
	return fmt.Sprintf("%s: %s, %s", s.Arg, what, s.Spec.OptionFile)
}

// cutTree splits a DIR:REV side at the first ':' whose left part is a
// directory (so a tree's path may hold ':'); ok is false when none is.
func cutTree(arg string) (dir, rev string, ok bool) {
	for i := range len(arg) {
		if arg[i] == ':' && i > 0 && isDir(arg[:i]) {
			return arg[:i], arg[i+1:], true
		}
	}
	return "", "", false
}

// isServerDir reports whether arg may be a directory: it holds a / or is
// . or .. (an existing directory wins over a revision of that name:
// origin/main is a revision unless ./origin/main exists; a directory
// without a / is written ./name).
func isServerDir(arg string) bool {
	return strings.Contains(arg, "/") || arg == "." || arg == ".."
}

// ResolveSides reads compare's sides as typed, the first the base: a
// revision of su.Repo, DIR:REV (a revision of the git tree DIR), or the
// directory of an installed server; each gets the option file given for it
// (su.SideOptionFiles, in order) or the shared one. Errors (usage) name the
// side and show the form: a revision that does not resolve, a directory
// that holds no server, another tree that is not a git repository, option
// files given neither once nor once per side, fewer than two sides, or two
// sides that are the same server under the same option file.
func ResolveSides(ctx context.Context, su *Setup, args []string) ([]Side, error) {
	if len(args) < 2 {
		return nil, usageError("compare needs at least two sides (got %s): "+sideForm, Counted(len(args), "argument"))
	}
	if su.Policy.Improvement {
		return nil, usageError("{find} improvement: compare looks for a regression of each side against the first (put the faster one first to look for a speed-up)")
	}
	if n := len(su.SideOptionFiles); n > 0 && n != len(args) {
		return nil, usageError("{my-cnf} given %d times for %d sides: give it once (every side) or once per side, in order: "+sideForm, n, len(args))
	}
	var sides []Side
	for i, arg := range args {
		s, err := resolveSide(ctx, su, arg)
		if err != nil {
			return nil, usageError("side %d %w ("+sideForm+")", i+1, err)
		}
		s.Spec.OptionFile = su.OptionFile
		if len(su.SideOptionFiles) > 0 {
			s.Spec.OptionFile = su.SideOptionFiles[i]
		}
		s.Key = sideKey(s, len(su.SideOptionFiles) > 0)
		for j, o := range sides {
			if o.Key == s.Key {
				return nil, usageError("sides %d (%s) and %d (%s) are the same server under the same option file: nothing to compare ("+sideForm+")", j+1, o.Arg, i+1, arg)
			}
		}
		sides = append(sides, s)
	}
	return sides, nil
}

// resolveSide reads one side (without its option file).
func resolveSide(ctx context.Context, su *Setup, arg string) (Side, error) {
	if dir, rev, ok := cutTree(arg); ok {
		abs, _ := filepath.Abs(dir)
		repo, err := bisect.OpenRepo(dir)
		if err != nil {
			return Side{}, fmt.Errorf("%s: %w", arg, err)
		}
		root := abs
		if wt, err := repo.Worktree(); err == nil {
			root = wt.Filesystem.Root()
		}
		commit, err := bisect.Resolve(repo, rev)
		if err != nil {
			return Side{}, fmt.Errorf("%s: %w", arg, err)
		}
		if root == su.RepoRoot {
			root, repo = "", su.Repo // --repo's own tree written as DIR:REV
		}
		return Side{Arg: arg, Repo: repo, Tree: root, Spec: measure.Side{Commit: commit}}, nil
	}
	if isServerDir(arg) && isDir(arg) {
		abs, _ := filepath.Abs(arg)
		in, err := serverctl.FindInstall(ctx, abs)
		if err != nil {
			why := err.Error()
			if errors.Is(err, serverctl.ErrNoServer) {
				why = "no bin/mysqld, sbin/mysqld or sbin/mariadbd under it"
			}
			return Side{}, fmt.Errorf("%s: not an installed server (%s); a revision of another tree is DIR:REV", abs, why)
		}
		return Side{Arg: arg, Install: in, Spec: measure.Side{Basedir: abs}}, nil
	}
	if su.Repo == nil {
		return Side{}, fmt.Errorf("%s: a revision, but %w", arg, su.repoErr)
	}
	commit, err := bisect.Resolve(su.Repo, arg)
	if dir, _, ok := strings.Cut(arg, ":"); err != nil && ok && strings.Contains(dir, "/") {
		return Side{}, fmt.Errorf("%s: the directory %s of DIR:REV does not exist", arg, dir)
	}
	if err != nil && isServerDir(arg) {
		return Side{}, fmt.Errorf("%s: neither a revision of the repository nor a directory (%w)", arg, err)
	}
	if err != nil {
		return Side{}, fmt.Errorf("%s: %w", arg, err)
	}
	return Side{Arg: arg, Repo: su.Repo, Spec: measure.Side{Commit: commit}}, nil
}

// sideKey is the subject a side is measured and stored as: its commit for a
// revision of --repo under the shared option file (as compare always
// stored it); otherwise "side-" and a digest of what it stands for.
func sideKey(s Side, perSide bool) string {
	if s.Tree == "" && s.Install == nil && !perSide {
		return s.Spec.Commit
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s\x00%s", s.Tree, s.Spec.Commit, s.Spec.Basedir, s.Spec.OptionFile.Path, s.Spec.OptionFile.Digest)
	if s.Install != nil {
		// Another binary at the same place (a package upgraded) is another side.
		fi, _ := os.Stat(s.Install.Server)
		if fi != nil {
			fmt.Fprintf(h, "\x00%s\x00%d\x00%d", s.Install.VersionLine, fi.Size(), fi.ModTime().UnixNano())
		}
	}
	return "side-" + hex.EncodeToString(h.Sum(nil))[:16]
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// useSides gives the measurer what each side's key stands for, with a
// builder for each other tree (after Lock: the builds go to the state
// directory's cache, keyed by commit and recipe as --repo's).
func (s *Setup) useSides(sides []Side) {
	s.Sides = map[string]measure.Side{}
	builders := map[string]*build.Builder{}
	for _, sd := range sides {
		spec := sd.Spec
		spec.Name = sideName(sd)
		if sd.Tree != "" {
			if builders[sd.Tree] == nil {
				builders[sd.Tree] = s.Build.Builder(sd.Repo, s.StateDir, s.Log, s.Live)
			}
			spec.Builder = builders[sd.Tree]
		}
		s.Sides[sd.Key] = spec
	}
}

// checkSides reads each side's option file as its server will, before
// anything is built (CheckSettings): with its tree's groups at its commit,
// or the installed server's.
func (s *Setup) checkSides(sides []Side) error {
	for i, sd := range sides {
		var groups []string
		if sd.Install != nil {
			groups = serverctl.ServerGroups(sd.Install)
		} else {
			g, err := treeGroups(sd.Repo, sd.Spec.Commit)
			if err != nil {
				return err
			}
			groups = g
		}
		if err := checkOptionGroups(sd.Spec.OptionFile, groups); err != nil {
			return usageError("side %d (%s): %w", i+1, sd.Arg, err)
		}
	}
	return nil
}

// askInstalled asks each installed side's server whether it takes every
// setting of the side's option file (serverctl.Install.AcceptsFile), before
// anything is measured; a revision's server can only be asked once built.
// Errors: usage, naming the side, the server and the setting.
func askInstalled(ctx context.Context, sides []Side) error {
	for i, sd := range sides {
		if sd.Install == nil {
			continue
		}
		if err := sd.Install.AcceptsFile(ctx, sd.Spec.OptionFile); errors.Is(err, serverctl.ErrUnknownSetting) {
			return usageError("side %d (%s): %s %w", i+1, sd.Arg, sd.Install.Server, err)
		} else if err != nil {
			return err
		}
	}
	return nil
}
