// Package diskfault tells a full or read-only disk apart from a revision's
// fault. A server that cannot write its datadir fails as a broken revision
// does ("InnoDB: preallocating ... failed with error 28", then "Aborting"), so
// every failure that would be blamed on a revision is first checked here: the
// error's text for the signs of ENOSPC and EROFS, and the filesystem that
// holds the state directory for its free space and read-only flag.
package diskfault

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"syscall"
	"time"

	"github.com/dustin/go-humanize"
	"golang.org/x/sys/unix"
)

// MinFree is the free space (bytes) below which the state directory's
// filesystem counts as full whatever the error says: a datadir copy alone
// needs more.
const MinFree = 16 << 20

// Error is a failure caused by the disk that holds Dir: full (Free bytes
// left, under MinFree or a write failed with ENOSPC) or mounted read-only.
// It is the machine's, never a revision's; Err is the failure as it came.
type Error struct {
	Dir      string
	Free     uint64
	ReadOnly bool
	Err      error
}

func (e *Error) Error() string {
	if e.ReadOnly {
		return fmt.Sprintf("the state directory %s is on a read-only file system: make it writable; no revision is blamed for this failure: %v", e.Dir, e.Err)
	}
	return fmt.Sprintf("the disk holding %s is full (%s free): free space there; no revision is blamed for this failure: %v", e.Dir, humanize.IBytes(e.Free), e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// The words of ENOSPC and EROFS in the messages of the server, the OS,
// SQLite and the C library (an error that arrives as text, from a log).
var (
	noSpace  = regexp.MustCompile(`(?i)no space left on device|out of disk space|disk full|database or disk is full|\berrno:? 28\b|\berror (number )?28\b|\bErrcode: 28\b`)
	readOnly = regexp.MustCompile(`(?i)read-only file system|\berrno:? 30\b|\bErrcode: 30\b`)
)

// Check returns an *Error when err (nil or not) comes from the disk that
// holds dir: its text or chain says ENOSPC or EROFS, or the filesystem has
// under MinFree bytes free or is mounted read-only. Otherwise it returns nil.
// With err nil only the filesystem is looked at.
func Check(dir string, err error) *Error {
	if err != nil {
		var de *Error
		if errors.As(err, &de) {
			return de
		}
	}
	var st unix.Statfs_t
	statErr := unix.Statfs(dir, &st)
	free := uint64(0)
	if statErr == nil {
		free = st.Bavail * uint64(st.Bsize)
	}
	ro := statErr == nil && st.Flags&unix.ST_RDONLY != 0
	if err != nil {
		ro = ro || errors.Is(err, syscall.EROFS) || readOnly.MatchString(err.Error())
	}
	full := statErr == nil && free < MinFree
	if err != nil {
		full = full || errors.Is(err, syscall.ENOSPC) || noSpace.MatchString(err.Error())
	}
	switch {
	case ro:
		return &Error{Dir: dir, Free: free, ReadOnly: true, Err: err}
	case full:
		return &Error{Dir: dir, Free: free, Err: err}
	}
	return nil
}

// WatchEvery is how often Watch looks at the disk, and WatchGrace how long
// the disk must stay full (under MinFree) before Watch ends the work: a
// server that runs out of space does not fail, it waits ("Disk full ...
// waiting for someone to free some space", retried every 60 s), so a
// preparation on a full disk would wait forever.
var (
	WatchEvery = 250 * time.Millisecond
	WatchGrace = 5 * time.Second
)

// Watcher watches the disk that holds a directory while work runs (Watch).
type Watcher struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	done   chan struct{}
	once   sync.Once
	mu     sync.Mutex
	seen   *Error
}

// Watch starts watching the filesystem holding dir: the Watcher's Context
// (derived from ctx) is cancelled, with an *Error as its cause (see Cause),
// once the filesystem has had under MinFree bytes free (or has been
// read-only) for WatchGrace, and Seen tells whether it was so at any look.
// Call Stop when the watched work is over.
func Watch(ctx context.Context, dir string) *Watcher {
	wctx, cancel := context.WithCancelCause(ctx)
	w := &Watcher{ctx: wctx, cancel: cancel, done: make(chan struct{})}
	go w.watch(dir)
	return w
}

func (w *Watcher) watch(dir string) {
	tick := time.NewTicker(WatchEvery)
	defer tick.Stop()
	var since time.Time
	for {
		select {
		case <-w.done:
			return
		case <-w.ctx.Done():
			return
		case now := <-tick.C:
			de := Check(dir, nil)
			switch {
			case de == nil:
				since = time.Time{}
				continue
			case since.IsZero():
				since = now
			}
			w.mu.Lock()
			w.seen = de
			w.mu.Unlock()
			if now.Sub(since) >= WatchGrace {
				de.Err = fmt.Errorf("stopped after %s with the disk full: a server waits for space instead of failing", now.Sub(since).Round(time.Second))
				if de.ReadOnly {
					de.Err = fmt.Errorf("stopped after %s with the disk read-only", now.Sub(since).Round(time.Second))
				}
				w.cancel(de)
				return
			}
		}
	}
}

// Context is the watched work's context.
func (w *Watcher) Context() context.Context { return w.ctx }

// Seen returns the disk as Watch saw it at the latest look that found it
// full or read-only, nil when no look did: a server that failed on a full
// disk may free space as it exits (its unlinked temporary files), so the
// disk after a failure can look fine while the failure was the disk's.
func (w *Watcher) Seen() *Error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.seen == nil {
		return nil
	}
	de := *w.seen
	return &de
}

// Stop ends the watch and cancels its context.
func (w *Watcher) Stop() {
	w.once.Do(func() {
		close(w.done)
		w.cancel(nil)
	})
}

// Cause returns the *Error that ended a Watcher's context, or nil when the
// disk did not end it.
func Cause(ctx context.Context) *Error {
	var de *Error
	if errors.As(context.Cause(ctx), &de) {
		return de
	}
	return nil
}
