package build

import (
	"errors"
	"fmt"
	"io"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/perfbisect/perfbisect/internal/gitcat"
)

// blobSource reads the content of blobs for a checkout.
type blobSource interface {
	// copyBlob writes blob h's content to w.
	copyBlob(h plumbing.Hash, w io.Writer) error
	close()
}

// openBlobs returns the blob source of a checkout of repo, whose git
// directory is gitDir: one `git cat-file --batch` process when git is
// installed (the blobs of a 20,000-file server tree go through git's memory,
// not ours: go-git's delta resolution kept ~200 MB resident), else go-git.
func openBlobs(repo *git.Repository, gitDir string) blobSource {
	if gitDir != "" {
		if b, err := gitcat.Start(gitDir, false); err == nil {
			return catFile{b}
		}
	}
	return goGitBlobs{repo}
}

type goGitBlobs struct{ repo *git.Repository }

func (g goGitBlobs) copyBlob(h plumbing.Hash, w io.Writer) error {
	blob, err := g.repo.BlobObject(h)
	if err != nil {
		return err
	}
	r, err := blob.Reader()
	if err != nil {
		return err
	}
	defer r.Close()
	_, err = io.Copy(w, r)
	return err
}

func (goGitBlobs) close() {}

// catFile is a checkout's blobs read by git cat-file --batch.
type catFile struct{ b *gitcat.Batch }

func (c catFile) copyBlob(h plumbing.Hash, w io.Writer) error {
	_, _, err := c.b.Contents(h.String(), "blob", w)
	if errors.Is(err, gitcat.ErrMissing) {
		return fmt.Errorf("blob %s: %w", h, plumbing.ErrObjectNotFound)
	}
	return err
}

// close ends the process (killed: a failed write may have left a blob
// unread).
func (c catFile) close() { c.b.Close() }
