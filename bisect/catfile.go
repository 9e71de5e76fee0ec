package bisect

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/perfbisect/perfbisect/internal/gitcat"
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
// same git directory (package gitcat): refs, config and everything else are
// go-git's. Objects larger than largeObject are streamed by a git cat-file
// of their own when read, not held. It is safe for concurrent use.
type catFileStorage struct {
	*filesystem.Storage
	dir string // the git directory

	mu    sync.Mutex
	batch *gitcat.Batch // contents; nil when not running
	check *gitcat.Batch // type and size only
	idle  *time.Timer
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

// proc returns the running cat-file (check: --batch-check), starting it
// when there is none, and puts off the idle stop. s.mu is held.
func (s *catFileStorage) proc(check bool) (*gitcat.Batch, error) {
	p := &s.batch
	if check {
		p = &s.check
	}
	if *p == nil {
		b, err := gitcat.Start(s.dir, check)
		if err != nil {
			return nil, fmt.Errorf("git cat-file: %w", err)
		}
		*p = b
	}
	if s.idle == nil {
		s.idle = time.AfterFunc(catFileIdle, s.stopIdle)
	} else {
		s.idle.Reset(catFileIdle)
	}
	return *p, nil
}

// info returns the type and size of the object h (plumbing.ErrObjectNotFound
// when there is none). s.mu is held.
func (s *catFileStorage) info(h plumbing.Hash) (plumbing.ObjectType, int64, error) {
	b, err := s.proc(true)
	if err != nil {
		return 0, 0, err
	}
	typ, size, err := b.Info(h.String())
	if err != nil {
		s.forget(b, err)
		return 0, 0, notFound(err)
	}
	t, err := plumbing.ParseObjectType(typ)
	return t, size, err
}

// forget drops b after an error other than a missing object (gitcat has
// closed it: the next request starts another). s.mu is held.
func (s *catFileStorage) forget(b *gitcat.Batch, err error) {
	if errors.Is(err, gitcat.ErrMissing) {
		return
	}
	if s.batch == b {
		s.batch = nil
	}
	if s.check == b {
		s.check = nil
	}
}

// notFound is err with gitcat.ErrMissing as plumbing.ErrObjectNotFound.
func notFound(err error) error {
	if errors.Is(err, gitcat.ErrMissing) {
		return plumbing.ErrObjectNotFound
	}
	return err
}

// stopIdle ends the cat-file processes once no request came for catFileIdle.
func (s *catFileStorage) stopIdle() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, b := range []*gitcat.Batch{s.batch, s.check} {
		if b != nil {
			b.Close()
		}
	}
	s.batch, s.check = nil, nil
}

// EncodedObject returns the object h of type t (plumbing.AnyObject for any):
// plumbing.ErrObjectNotFound when the repository has none of that type.
func (s *catFileStorage) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	typ, size, err := s.info(h)
	if err != nil {
		return nil, err
	}
	if t != plumbing.AnyObject && typ != t {
		return nil, plumbing.ErrObjectNotFound
	}
	if size > largeObject {
		return &lazyObject{dir: s.dir, hash: h, typ: typ, size: size}, nil
	}
	b, err := s.proc(false)
	if err != nil {
		return nil, err
	}
	o := &plumbing.MemoryObject{}
	o.SetType(typ)
	if _, _, err := b.Contents(h.String(), typ.String(), o); err != nil {
		s.forget(b, err)
		return nil, notFound(err)
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
	_, _, err := s.info(h)
	return err
}

// EncodedObjectSize returns the size in bytes of the object h.
func (s *catFileStorage) EncodedObjectSize(h plumbing.Hash) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, size, err := s.info(h)
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

// Reader streams the object's contents from git cat-file (gitcat.Reader).
func (o *lazyObject) Reader() (io.ReadCloser, error) {
	return gitcat.Reader(o.dir, o.typ.String(), o.hash.String(), o.size)
}
