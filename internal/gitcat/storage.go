package gitcat

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
)

// IdleTimeout is how long a Storage keeps a cat-file process without a
// request before it ends it (the next request starts another).
var IdleTimeout = 10 * time.Second

// Storage is a repository's go-git filesystem storage whose objects are
// read by a long-running git cat-file --batch (and --batch-check) over the
// same git directory: refs, config and everything else are go-git's.
// Objects larger than its large size are streamed by a git cat-file of their
// own when read, not held. It is safe for concurrent use.
type Storage struct {
	*filesystem.Storage
	dir   string // the git directory
	large int64  // objects larger than this are streamed (lazyObject)

	mu    sync.Mutex
	batch *Batch // contents; nil when not running
	check *Batch // type and size only
	idle  *time.Timer
}

// PackedObjects is the number of objects in the packs of the git directory
// dir, from their indexes' fan-out tables (version 2 indexes; a version 1
// index counts from its first table as well).
func PackedObjects(dir string) int64 {
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

// NewStorage wraps st (over the git directory dir) so that its objects are
// read by git cat-file; objects larger than large bytes are streamed.
func NewStorage(st *filesystem.Storage, dir string, large int64) *Storage {
	return &Storage{Storage: st, dir: dir, large: large}
}

// Running reports whether the storage has a cat-file process running (they
// end after IdleTimeout without a request).
func (s *Storage) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.batch != nil || s.check != nil
}

// proc returns the running cat-file (check: --batch-check), starting it
// when there is none, and puts off the idle stop. s.mu is held.
func (s *Storage) proc(check bool) (*Batch, error) {
	p := &s.batch
	if check {
		p = &s.check
	}
	if *p == nil {
		b, err := Start(s.dir, check)
		if err != nil {
			return nil, fmt.Errorf("git cat-file: %w", err)
		}
		*p = b
	}
	if s.idle == nil {
		s.idle = time.AfterFunc(IdleTimeout, s.stopIdle)
	} else {
		s.idle.Reset(IdleTimeout)
	}
	return *p, nil
}

// info returns the type and size of the object h (plumbing.ErrObjectNotFound
// when there is none). s.mu is held.
func (s *Storage) info(h plumbing.Hash) (plumbing.ObjectType, int64, error) {
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
func (s *Storage) forget(b *Batch, err error) {
	if errors.Is(err, ErrMissing) {
		return
	}
	if s.batch == b {
		s.batch = nil
	}
	if s.check == b {
		s.check = nil
	}
}

// notFound is err with ErrMissing as plumbing.ErrObjectNotFound.
func notFound(err error) error {
	if errors.Is(err, ErrMissing) {
		return plumbing.ErrObjectNotFound
	}
	return err
}

// stopIdle ends the cat-file processes once no request came for IdleTimeout.
func (s *Storage) stopIdle() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, b := range []*Batch{s.batch, s.check} {
		if b != nil {
			b.Close()
		}
	}
	s.batch, s.check = nil, nil
}

// EncodedObject returns the object h of type t (plumbing.AnyObject for any):
// plumbing.ErrObjectNotFound when the repository has none of that type.
func (s *Storage) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	typ, size, err := s.info(h)
	if err != nil {
		return nil, err
	}
	if t != plumbing.AnyObject && typ != t {
		return nil, plumbing.ErrObjectNotFound
	}
	if size > s.large {
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
func (s *Storage) HasEncodedObject(h plumbing.Hash) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, _, err := s.info(h)
	return err
}

// EncodedObjectSize returns the size in bytes of the object h.
func (s *Storage) EncodedObjectSize(h plumbing.Hash) (int64, error) {
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

// Reader streams the object's contents from git cat-file (Reader).
func (o *lazyObject) Reader() (io.ReadCloser, error) {
	return Reader(o.dir, o.typ.String(), o.hash.String(), o.size)
}
