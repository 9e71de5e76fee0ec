package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/build"
)

// BuildRevisionsRequest is `perfbisect build`: revisions of the repository at Repo
// (as typed) built into the build cache of the state directory (StateDir,
// "" for the repository's default) with Settings. Out gets "COMMIT\tPREFIX"
// (or "COMMIT\tfailed") per revision, Log the build's progress lines and
// Warn (when set) the machine's problems a build works around.
type BuildRevisionsRequest struct {
	Repo           string
	Refs           []string
	Settings       BuildSettings
	StateDir       string
	Out, Log, Warn io.Writer
}

// BuildRevisions builds each revision (a cached one is not built again).
// Errors: usage for a repository or ref that does not resolve; a failure
// when a revision does not build (after the others were tried) or when the
// machine fails (at once); ctx's error when interrupted.
func BuildRevisions(ctx context.Context, req BuildRevisionsRequest) error {
	repo, err := bisect.OpenRepo(req.Repo)
	if err != nil {
		return With(Usage, err)
	}
	var commits []string
	for _, ref := range req.Refs {
		h, err := bisect.Resolve(repo, ref)
		if err != nil {
			return With(Usage, err)
		}
		commits = append(commits, h)
	}
	root, _ := filepath.Abs(req.Repo)
	if wt, err := repo.Worktree(); err == nil {
		root = wt.Filesystem.Root()
	}
	dir, err := MakeStateDir(req.StateDir, root)
	if err != nil {
		return err
	}
	unlock, err := LockAndReap(dir, os.Stderr)
	if err != nil {
		return err
	}
	defer unlock()
	warn := req.Warn
	if warn == nil {
		warn = req.Log
	}
	req.Settings.ResolveLayouts(repo, false, req.Log, warn)
	b := req.Settings.Builder(repo, dir, req.Log, nil)
	b.Warn = req.Warn
	failed := 0
	for _, commit := range commits {
		prefix, err := b.Build(ctx, commit)
		var be *build.BuildError
		switch {
		case err == nil:
			fmt.Fprintf(req.Out, "%s\t%s\n", commit, prefix)
		case errors.As(err, &be) && !be.Machine:
			failed++
			fmt.Fprintf(req.Out, "%s\tfailed\n", commit)
			fmt.Fprintf(os.Stderr, "perfbisect: %v\n", err)
		default:
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return With(Failure, err)
		}
	}
	if failed > 0 {
		return With(Failure, fmt.Errorf("%d of %d revision(s) did not build", failed, len(commits)))
	}
	return nil
}
