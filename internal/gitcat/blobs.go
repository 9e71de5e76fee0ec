package gitcat

import (
	"errors"
	"fmt"
	"io"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
)

// Blobs reads the content of blobs, for a checkout.
type Blobs interface {
	// CopyBlob writes blob h's content to w.
	CopyBlob(h plumbing.Hash, w io.Writer) error
	// Close ends what reads them.
	Close()
}

// OpenBlobs returns the blobs of repo, whose git directory is gitDir: read
// by one `git cat-file --batch` process when git is installed (a server
// tree's blobs go through git's memory, not ours), else by go-git.
func OpenBlobs(repo *git.Repository, gitDir string) Blobs {
	if gitDir != "" {
		if b, err := Start(gitDir, false); err == nil {
			return batchBlobs{b}
		}
	}
	return goGitBlobs{repo}
}

type goGitBlobs struct{ repo *git.Repository }

func (g goGitBlobs) CopyBlob(h plumbing.Hash, w io.Writer) error {
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

func (goGitBlobs) Close() {}

// batchBlobs are blobs read by git cat-file --batch.
type batchBlobs struct{ b *Batch }

func (c batchBlobs) CopyBlob(h plumbing.Hash, w io.Writer) error {
	_, _, err := c.b.Contents(h.String(), "blob", w)
	if errors.Is(err, ErrMissing) {
		return fmt.Errorf("blob %s: %w", h, plumbing.ErrObjectNotFound)
	}
	return err
}

// Close ends the process (killed: a failed write may have left a blob
// unread).
func (c batchBlobs) Close() { c.b.Close() }
