package bisect

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// CatFileObjects is the number of packed objects from which OpenRepo reads a
// repository's objects through git cat-file (when the git command is
// installed) instead of go-git's pack reader: go-git holds every pack's
// index in memory, names and a map from offset to name, about 117 MB for
// the 1,052,071 objects of a MySQL history (ottok/mysql-wsrep), where a
// server tree's checkout should cost perfbisect well under 100 MB.
// git maps its pack indexes and keeps them out of perfbisect's heap.
var CatFileObjects int64 = 200_000

// catFileIdle is how long a cat-file process is kept without a request
// before it is ended (the next request starts another).
var catFileIdle = 10 * time.Second

// catFileStorage is a repository's filesystem storage whose objects are
// read by a long-running git cat-file --batch (and --batch-check) over the
// same git directory: refs, config and everything else are go-git's.
// Objects larger than largeObject are streamed by a git cat-file of their
// own when read, not held. It is safe for concurrent use.
type catFileStorage struct {
	*filesystem.Storage
	dir string // the git directory

	mu    sync.Mutex
	batch *catFile // contents; nil when not running
	check *catFile // type and size only
	idle  *time.Timer
}

// catFile is one git cat-file process in a batch mode.
type catFile struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

// packedObjects is the number of objects in the packs of the git directory
// dir, from their indexes' fan-out tables (version 2 indexes; a version 1
// index counts from its first table as well).
func packedObjects(dir string) int64 {
	idx, _ := filepath.Glob(filepath.Join(dir, "objects", "pack", "*.idx"))
	var n int64
	for _, name := range idx {
		f, err := os.Open(name)
		if err != nil {
			continue
		}
		var head [8 + 256*4]byte
		if _, err := io.ReadFull(f, head[:]); err == nil {
			fanout := head[8:]
			if !bytes.Equal(head[:4], []byte{0xff, 't', 'O', 'c'}) {
				fanout = head[:256*4] // version 1: the table comes first
			}
			n += int64(binary.BigEndian.Uint32(fanout[255*4:]))
		}
		f.Close()
	}
	return n
}

// newCatFileStorage wraps st (over the git directory dir) so that its
// objects are read by git cat-file.
func newCatFileStorage(st *filesystem.Storage, dir string) *catFileStorage {
	return &catFileStorage{Storage: st, dir: dir}
}

// start runs git cat-file with mode (--batch or --batch-check).
func (s *catFileStorage) start(mode string) (*catFile, error) {
	cmd := exec.Command("git", "--git-dir", s.dir, "cat-file", mode)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "LC_ALL=C")
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &catFile{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 64<<10)}, nil
}

// stop ends a cat-file process (closing its input ends it).
func (c *catFile) stop() {
	if c == nil {
		return
	}
	c.in.Close()
	_ = c.cmd.Wait()
}

// request asks a running (or started) cat-file of mode for h; it returns
// the process, the object's type and size, or plumbing.ErrObjectNotFound.
// s.mu is held.
func (s *catFileStorage) request(mode string, h plumbing.Hash) (*catFile, plumbing.ObjectType, int64, error) {
	p := &s.check
	if mode == "--batch" {
		p = &s.batch
	}
	if *p == nil {
		c, err := s.start(mode)
		if err != nil {
			return nil, 0, 0, fmt.Errorf("git cat-file: %w", err)
		}
		*p = c
	}
	if s.idle == nil {
		s.idle = time.AfterFunc(catFileIdle, s.stopIdle)
	} else {
		s.idle.Reset(catFileIdle)
	}
	c := *p
	if _, err := fmt.Fprintf(c.in, "%s\n", h); err != nil {
		c.stop()
		*p = nil
		return nil, 0, 0, fmt.Errorf("git cat-file: %w", err)
	}
	line, err := c.out.ReadString('\n')
	if err != nil {
		c.stop()
		*p = nil
		return nil, 0, 0, fmt.Errorf("git cat-file: %w", err)
	}
	f := strings.Fields(line)
	if len(f) == 2 && f[1] == "missing" {
		return c, 0, 0, plumbing.ErrObjectNotFound
	}
	if len(f) != 3 {
		c.stop()
		*p = nil
		return nil, 0, 0, fmt.Errorf("git cat-file: unexpected answer %q", line)
	}
	t, err := plumbing.ParseObjectType(f[1])
	if err != nil {
		return nil, 0, 0, fmt.Errorf("git cat-file: %w", err)
	}
	size, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("git cat-file: %w", err)
	}
	return c, t, size, nil
}

// stopIdle ends the cat-file processes once no request came for catFileIdle.
func (s *catFileStorage) stopIdle() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.batch.stop()
	s.check.stop()
	s.batch, s.check = nil, nil
}

// EncodedObject returns the object h of type t (plumbing.AnyObject for any):
// plumbing.ErrObjectNotFound when the repository has none of that type.
func (s *catFileStorage) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, typ, size, err := s.request("--batch-check", h)
	if err != nil {
		return nil, err
	}
	if t != plumbing.AnyObject && typ != t {
		return nil, plumbing.ErrObjectNotFound
	}
	if size > largeObject {
		return &lazyObject{dir: s.dir, hash: h, typ: typ, size: size}, nil
	}
	c, typ, size, err := s.request("--batch", h)
	if err != nil {
		return nil, err
	}
	buf := make([]byte, size+1) // the contents and git's newline after them
	if _, err := io.ReadFull(c.out, buf); err != nil {
		c.stop()
		s.batch = nil
		return nil, fmt.Errorf("git cat-file: %w", err)
	}
	o := &plumbing.MemoryObject{}
	o.SetType(typ)
	if _, err := o.Write(buf[:size]); err != nil {
		return nil, err
	}
	if o.Hash() != h {
		return nil, fmt.Errorf("git cat-file: object %s read as %s", h, o.Hash())
	}
	return o, nil
}

// HasEncodedObject returns nil when the repository has the object h, else
// plumbing.ErrObjectNotFound.
func (s *catFileStorage) HasEncodedObject(h plumbing.Hash) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, _, _, err := s.request("--batch-check", h)
	return err
}

// EncodedObjectSize returns the size in bytes of the object h.
func (s *catFileStorage) EncodedObjectSize(h plumbing.Hash) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, _, size, err := s.request("--batch-check", h)
	return size, err
}

// lazyObject is a large object read by a git cat-file of its own each time
// its Reader is asked for: never held in memory.
type lazyObject struct {
	dir  string
	hash plumbing.Hash
	typ  plumbing.ObjectType
	size int64
}

func (o *lazyObject) Hash() plumbing.Hash           { return o.hash }
func (o *lazyObject) Type() plumbing.ObjectType     { return o.typ }
func (o *lazyObject) SetType(t plumbing.ObjectType) { o.typ = t }
func (o *lazyObject) Size() int64                   { return o.size }
func (o *lazyObject) SetSize(n int64)               { o.size = n }
func (o *lazyObject) Writer() (io.WriteCloser, error) {
	return nil, fmt.Errorf("object %s is read-only", o.hash)
}

// Reader streams the object's contents from git cat-file.
func (o *lazyObject) Reader() (io.ReadCloser, error) {
	cmd := exec.Command("git", "--git-dir", o.dir, "cat-file", o.typ.String(), o.hash.String())
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "LC_ALL=C")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("git cat-file: %w", err)
	}
	return &cmdReader{out: out, cmd: cmd, want: o.size}, nil
}

// cmdReader is a command's output of want bytes: an end before them is
// io.ErrUnexpectedEOF (a file is never written short). Close ends and
// waits for the command.
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
	_ = r.cmd.Wait() // killed by the closed pipe when not read to the end
	return nil
}
