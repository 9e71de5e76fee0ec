package build

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
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
		if gitBin, err := exec.LookPath("git"); err == nil {
			if c, err := newCatFile(gitBin, gitDir); err == nil {
				return c
			}
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

// catFile is a `git cat-file --batch` process: a hash per line in, "<hash>
// <type> <size>\n<content>\n" out.
type catFile struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr *bytes.Buffer
}

func newCatFile(gitBin, gitDir string) (*catFile, error) {
	// A submodule's git directory names its work tree (core.worktree), which
	// need not exist here; cat-file does not use one.
	cmd := exec.Command(gitBin, "--git-dir="+gitDir, "--work-tree="+gitDir, "cat-file", "--batch")
	cmd.Dir = gitDir
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &catFile{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 64<<10), stderr: &stderr}, nil
}

func (c *catFile) copyBlob(h plumbing.Hash, w io.Writer) error {
	if _, err := fmt.Fprintf(c.in, "%s\n", h); err != nil {
		return fmt.Errorf("git cat-file: %w", err)
	}
	header, err := c.out.ReadString('\n')
	if err != nil {
		c.close() // git is gone: its message is complete once it is waited for
		return fmt.Errorf("git cat-file %s: %w: %s", h, err, strings.TrimSpace(c.stderr.String()))
	}
	f := strings.Fields(header)
	if len(f) == 2 && f[1] == "missing" {
		return fmt.Errorf("blob %s: %w", h, plumbing.ErrObjectNotFound)
	}
	if len(f) != 3 || f[1] != "blob" {
		return fmt.Errorf("git cat-file %s: unexpected %q", h, strings.TrimSpace(header))
	}
	size, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil {
		return fmt.Errorf("git cat-file %s: %q: %w", h, strings.TrimSpace(header), err)
	}
	if _, err := io.CopyN(w, c.out, size); err != nil {
		return fmt.Errorf("git cat-file %s: %w", h, err)
	}
	if _, err := c.out.Discard(1); err != nil { // the newline after the content
		return fmt.Errorf("git cat-file %s: %w", h, err)
	}
	return nil
}

// close ends the process. It may be in the middle of writing a blob that a
// failed write left unread (a full disk): it is killed, not waited for to
// finish.
func (c *catFile) close() {
	if c.cmd.ProcessState != nil {
		return // closed already
	}
	c.in.Close()
	_ = c.cmd.Process.Kill()
	_ = c.cmd.Wait()
}
