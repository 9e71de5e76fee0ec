// Package gitcat reads objects of a git directory through one long-running
// `git cat-file --batch` (or `--batch-check`) process: git maps its pack
// indexes and resolves deltas in its own memory, where go-git holds every
// pack index of a repository in its heap and resolves a checkout's deltas in
// it (docs/measurements.md, "Memory and disk behind the design"). Storage gives go-git a repository's objects that
// way (bisect.OpenRepo, for large or borrowed histories), and Blobs a
// checkout's files (build).
package gitcat

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// ErrMissing is what Info and Contents return (errors.Is) for an object the
// repository does not have.
var ErrMissing = errors.New("object not found")

// Batch is one git cat-file process over a git directory. It is not safe for
// concurrent use; a failed request leaves it closed (Start another).
type Batch struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr *bytes.Buffer
	check  bool // --batch-check: headers only
}

// Start runs git cat-file on the git directory gitDir: --batch-check when
// check (Info only), else --batch (Info and Contents). Errors: no git
// command, or it cannot be started.
func Start(gitDir string, check bool) (*Batch, error) {
	gitBin, err := exec.LookPath("git")
	if err != nil {
		return nil, err
	}
	mode := "--batch"
	if check {
		mode = "--batch-check"
	}
	// A submodule's git directory names its work tree (core.worktree), which
	// need not exist here; cat-file does not use one.
	cmd := exec.Command(gitBin, "--git-dir="+gitDir, "--work-tree="+gitDir, "cat-file", mode)
	cmd.Dir = gitDir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "LC_ALL=C")
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
	return &Batch{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 64<<10), stderr: &stderr, check: check}, nil
}

// header asks for the object named hash (40 hex digits) and reads git's
// answer: its type ("blob", "tree", "commit", "tag") and size in bytes.
func (b *Batch) header(hash string) (string, int64, error) {
	if _, err := fmt.Fprintf(b.in, "%s\n", hash); err != nil {
		b.Close()
		return "", 0, fmt.Errorf("git cat-file: %w", err)
	}
	line, err := b.out.ReadString('\n')
	if err != nil {
		b.Close() // git is gone: its message is complete once it is waited for
		return "", 0, fmt.Errorf("git cat-file %s: %w: %s", hash, err, strings.TrimSpace(b.stderr.String()))
	}
	f := strings.Fields(line)
	if len(f) == 2 && f[1] == "missing" {
		return "", 0, fmt.Errorf("object %s: %w", hash, ErrMissing)
	}
	if len(f) != 3 {
		b.Close()
		return "", 0, fmt.Errorf("git cat-file %s: unexpected %q", hash, strings.TrimSpace(line))
	}
	size, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil {
		b.Close()
		return "", 0, fmt.Errorf("git cat-file %s: %q: %w", hash, strings.TrimSpace(line), err)
	}
	return f[1], size, nil
}

// Info returns the type and size of the object hash. Errors: ErrMissing,
// or git failed (the Batch is then closed).
func (b *Batch) Info(hash string) (typ string, size int64, err error) {
	if !b.check {
		return "", 0, errors.New("gitcat: Info of a --batch process (Start with check)")
	}
	return b.header(hash)
}

// Contents writes the object hash to w when it is of type want ("" for
// any) and returns its type and size. Errors: ErrMissing (also for an
// object of another type), w's (the Batch is then closed: git may be in
// the middle of the object), or git's.
func (b *Batch) Contents(hash, want string, w io.Writer) (typ string, size int64, err error) {
	if b.check {
		return "", 0, errors.New("gitcat: Contents of a --batch-check process")
	}
	typ, size, err = b.header(hash)
	if err != nil {
		return "", 0, err
	}
	if want != "" && typ != want {
		// Read past it: the process stays usable.
		if _, err := b.out.Discard(int(size) + 1); err != nil {
			b.Close()
			return "", 0, fmt.Errorf("git cat-file %s: %w", hash, err)
		}
		return "", 0, fmt.Errorf("object %s is a %s, not a %s: %w", hash, typ, want, ErrMissing)
	}
	if _, err := io.CopyN(w, b.out, size); err != nil {
		b.Close()
		return "", 0, fmt.Errorf("git cat-file %s: %w", hash, err)
	}
	if _, err := b.out.Discard(1); err != nil { // the newline after the content
		b.Close()
		return "", 0, fmt.Errorf("git cat-file %s: %w", hash, err)
	}
	return typ, size, nil
}

// Close ends the process. It may be in the middle of writing an object that
// a failed write left unread (a full disk): it is killed, not waited for to
// finish. Closing twice is harmless.
func (b *Batch) Close() {
	if b.cmd.ProcessState != nil {
		return
	}
	b.in.Close()
	_ = b.cmd.Process.Kill()
	_ = b.cmd.Wait()
}

// Reader streams the object hash of type typ from a git cat-file of its
// own (for objects too large to hold): reading it short of size bytes (git
// ended early) is io.ErrUnexpectedEOF, never a clean end. Close ends the
// process.
func Reader(gitDir, typ, hash string, size int64) (io.ReadCloser, error) {
	cmd := exec.Command("git", "--git-dir="+gitDir, "--work-tree="+gitDir, "cat-file", typ, hash)
	cmd.Dir = gitDir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "LC_ALL=C")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("git cat-file: %w", err)
	}
	return &cmdReader{out: out, cmd: cmd, want: size}, nil
}

// cmdReader is a command's output of want bytes.
type cmdReader struct {
	out       io.ReadCloser
	cmd       *exec.Cmd
	want, got int64
}

func (r *cmdReader) Read(p []byte) (int, error) {
	n, err := r.out.Read(p)
	r.got += int64(n)
	if err == io.EOF && r.got != r.want {
		err = fmt.Errorf("git cat-file: %d of %d bytes: %w", r.got, r.want, io.ErrUnexpectedEOF)
	}
	return n, err
}

func (r *cmdReader) Close() error {
	r.out.Close()
	_ = r.cmd.Process.Kill() // when not read to the end
	_ = r.cmd.Wait()
	return nil
}
