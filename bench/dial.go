package bench

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"sync"
	"syscall"
	"time"
)

// Connections of a run, and how statements are cancelled.
//
// sysbench's threads wait for the server in a blocking read(2): the kernel wakes
// the thread as soon as the reply is there. A Go net.Conn instead parks the
// goroutine on the runtime's network poller, and every round trip then costs an
// epoll wake-up and a hand-off between OS threads; on a 2-CPU machine shared with
// mysqld that halved oltp_read_only's throughput. So a run's connections are
// dialled normally (the context bounds the connect) and then turned into blocking
// sockets that are read and written with plain system calls (blockingConn).
//
// A blocking read cannot be interrupted by a deadline or a context, so statements
// run with context.WithoutCancel(runCtx) (which also spares database/sql a
// goroutine per result set), and a run cancels them all at once instead: the
// dialler records every connection of the run, and when the run's context ends it
// shuts them down (shutdown(2) wakes a blocked read, close(2) does not), which
// makes any blocked read or write return at once.

// connSet is the dialler and registry of one run's connections.
type connSet struct {
	mu     sync.Mutex
	conns  map[*blockingConn]struct{}
	closed bool
}

func newConnSet() *connSet {
	return &connSet{conns: map[*blockingConn]struct{}{}}
}

// dial opens a connection, as go-sql-driver's Config.DialFunc.
func (s *connSet) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	bc, err := newBlockingConn(nc)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		bc.Close()
		return nil, net.ErrClosed
	}
	bc.set = s
	s.conns[bc] = struct{}{}
	return bc, nil
}

// closeAll shuts down every connection of the run and refuses new ones. A
// thread blocked on one of them returns with an error; the connections are
// closed by their owners (or right here when nobody uses them any more).
func (s *connSet) closeAll() {
	s.mu.Lock()
	s.closed = true
	conns := make([]*blockingConn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

// readBufferSize is how much a connection reads from the socket at once.
// go-sql-driver reads at most 4 KiB per call, so a 100-row range result took
// four reads; libmysqlclient reads 16 KiB. Reading through a larger buffer takes
// whatever the server has sent in one system call.
const readBufferSize = 64 << 10

// blockingConn is a stream socket in blocking mode, read through a buffer. Its
// file is an *os.File, whose reference counting makes Close safe while another
// goroutine is inside Read or Write (the descriptor is released when they
// return, so its number cannot be reused under them).
type blockingConn struct {
	f             *os.File
	r             *bufio.Reader
	local, remote net.Addr
	set           *connSet
	once          sync.Once
}

// newBlockingConn takes nc's socket over in blocking mode: the descriptor is
// duplicated, nc closed (its poller registration goes with it) and the duplicate
// switched to blocking I/O. Socket options already set on nc (TCP_NODELAY)
// belong to the socket and stay.
func newBlockingConn(nc net.Conn) (*blockingConn, error) {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		nc.Close()
		return nil, fmt.Errorf("connection to %s has no file descriptor", nc.RemoteAddr())
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		nc.Close()
		return nil, err
	}
	dup := -1
	var derr error
	if err := raw.Control(func(fd uintptr) {
		dup, derr = syscall.Dup(int(fd))
	}); err != nil {
		derr = err
	}
	local, remote := nc.LocalAddr(), nc.RemoteAddr()
	nc.Close()
	if derr != nil {
		return nil, fmt.Errorf("take over connection to %s: %w", remote, derr)
	}
	syscall.CloseOnExec(dup)
	if err := syscall.SetNonblock(dup, false); err != nil {
		syscall.Close(dup)
		return nil, fmt.Errorf("connection to %s: blocking mode: %w", remote, err)
	}
	f := os.NewFile(uintptr(dup), "mysql "+remote.String())
	return &blockingConn{f: f, r: bufio.NewReaderSize(f, readBufferSize), local: local, remote: remote}, nil
}

// Read reads through the connection's buffer; it blocks the calling OS thread.
func (c *blockingConn) Read(b []byte) (int, error) { return c.r.Read(b) }

// Write writes all of b.
func (c *blockingConn) Write(b []byte) (int, error) { return c.f.Write(b) }

// Close shuts the socket down (waking a read or write blocked on it in another
// goroutine), closes it and removes it from its set.
func (c *blockingConn) Close() error {
	var err error
	c.once.Do(func() {
		if raw, rerr := c.f.SyscallConn(); rerr == nil {
			_ = raw.Control(func(fd uintptr) { _ = syscall.Shutdown(int(fd), syscall.SHUT_RDWR) })
		}
		err = c.f.Close()
		if c.set != nil {
			c.set.mu.Lock()
			delete(c.set.conns, c)
			c.set.mu.Unlock()
		}
	})
	return err
}

// LocalAddr is the local address of the socket.
func (c *blockingConn) LocalAddr() net.Addr { return c.local }

// RemoteAddr is the server's address.
func (c *blockingConn) RemoteAddr() net.Addr { return c.remote }

// SetDeadline and its two variants are not supported: a blocking socket is
// stopped by Close. openDB uses this connection only for DSNs without read and
// write timeouts, so the driver never sets one.
func (c *blockingConn) SetDeadline(time.Time) error      { return errNoDeadline }
func (c *blockingConn) SetReadDeadline(time.Time) error  { return errNoDeadline }
func (c *blockingConn) SetWriteDeadline(time.Time) error { return errNoDeadline }

var errNoDeadline = fmt.Errorf("bench: deadlines are not supported on a blocking connection")
