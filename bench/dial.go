package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Connections of a run, and how statements are cancelled.
//
// sysbench's threads wait for the server in the kernel: libmysqlclient reads a
// non-blocking socket and, when nothing is there yet, waits in poll(2) for
// POLLIN; the kernel wakes the thread when the reply is there. A Go net.Conn
// instead parks the goroutine on the runtime's network poller, and every round
// trip then costs an epoll wake-up and a hand-off between OS threads; on a 2-CPU
// machine shared with mysqld that halved oltp_read_only's throughput. So a run's
// connections are dialled normally (the context bounds the connect) and then
// taken over (sockConn): read and written with plain system calls, waiting in
// poll(2) like libmysqlclient. Not a blocking read(2): a reader blocked there is
// also woken each time the server consumes what the client sent (the socket's
// write-space wake-up), which doubled the context switches per statement.
//
// A thread waiting in poll(2) cannot be interrupted by a deadline or a context,
// so statements run with context.WithoutCancel(runCtx) (which also spares the
// driver a watcher hand-off per command), and a run cancels them all at once
// instead: the dialler records every connection of the run, and when the run's
// context ends it shuts them down (shutdown(2) wakes the poll; close(2) would
// not), which makes any waiting read or write return at once.

// connSet is the dialler and registry of one run's connections.
type connSet struct {
	mu     sync.Mutex
	conns  map[*sockConn]struct{}
	closed bool
}

func newConnSet() *connSet {
	return &connSet{conns: map[*sockConn]struct{}{}}
}

// dial opens a connection, as go-sql-driver's Config.DialFunc.
func (s *connSet) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	bc, err := newSockConn(nc)
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
	conns := make([]*sockConn, 0, len(s.conns))
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

// sockConn is a stream socket in non-blocking mode, read through a buffer,
// waiting for the server in poll(2). Its file is an *os.File in the os
// package's blocking mode (not on the runtime's poller), whose reference counting
// makes Close safe while another goroutine is inside Read, Write or a wait (the
// descriptor is released when they return, so its number cannot be reused under
// them).
type sockConn struct {
	f             *os.File
	raw           syscall.RawConn
	r             *bufio.Reader
	local, remote net.Addr
	set           *connSet
	once          sync.Once
}

// newSockConn takes nc's socket over: the descriptor is duplicated and nc closed
// (its poller registration goes with it); the duplicate is non-blocking and
// becomes a plain file. Socket options already set on nc (TCP_NODELAY) belong
// to the socket and stay.
func newSockConn(nc net.Conn) (*sockConn, error) {
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
	// os.NewFile must see a blocking descriptor, or it puts it on the poller.
	if err := syscall.SetNonblock(dup, false); err != nil {
		syscall.Close(dup)
		return nil, fmt.Errorf("connection to %s: %w", remote, err)
	}
	f := os.NewFile(uintptr(dup), "mysql "+remote.String())
	c := &sockConn{f: f, local: local, remote: remote}
	if c.raw, err = f.SyscallConn(); err == nil {
		err = syscall.SetNonblock(dup, true)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("connection to %s: %w", remote, err)
	}
	c.r = bufio.NewReaderSize(sockReader{c}, readBufferSize)
	return c, nil
}

// Read reads through the connection's buffer.
func (c *sockConn) Read(b []byte) (int, error) { return c.r.Read(b) }

// sockReader is the unbuffered read side of a sockConn.
type sockReader struct{ c *sockConn }

// Read reads what the socket has, waiting for POLLIN when it has nothing.
func (r sockReader) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	for {
		var n int
		var errno syscall.Errno
		if err := r.c.raw.Read(func(fd uintptr) bool {
			n, errno = recv(fd, b)
			return true
		}); err != nil {
			return 0, err
		}
		switch errno {
		case 0:
			if n == 0 {
				return 0, io.EOF
			}
			return n, nil
		case syscall.EINTR:
		case syscall.EAGAIN:
			if err := r.c.wait(unix.POLLIN); err != nil {
				return 0, err
			}
		default:
			return 0, os.NewSyscallError("recvfrom", errno)
		}
	}
}

// recv is recvfrom(2) without an address, as libmysqlclient's recv. It never
// blocks (the socket is non-blocking), so it is a raw system call.
func recv(fd uintptr, b []byte) (int, syscall.Errno) {
	n, _, errno := syscall.RawSyscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), 0, 0, 0)
	return int(n), errno
}

// send is sendto(2) without an address and with MSG_NOSIGNAL (a closed peer is
// EPIPE, not SIGPIPE), as libmysqlclient's send; raw like recv.
func send(fd uintptr, b []byte) (int, syscall.Errno) {
	n, _, errno := syscall.RawSyscall6(syscall.SYS_SENDTO, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), syscall.MSG_NOSIGNAL, 0, 0)
	return int(n), errno
}

// Write writes all of b, waiting for POLLOUT when the socket's buffer is full.
func (c *sockConn) Write(b []byte) (int, error) {
	done := 0
	for done < len(b) {
		var n int
		var errno syscall.Errno
		if err := c.raw.Write(func(fd uintptr) bool {
			n, errno = send(fd, b[done:])
			return true
		}); err != nil {
			return done, err
		}
		switch errno {
		case 0:
			done += n
		case syscall.EINTR:
		case syscall.EAGAIN:
			if err := c.wait(unix.POLLOUT); err != nil {
				return done, err
			}
		default:
			return done, os.NewSyscallError("sendto", errno)
		}
	}
	return done, nil
}

// wait blocks the calling OS thread in poll(2) until the socket has events (or
// an error or hang-up, which the next read or write reports).
func (c *sockConn) wait(events int16) error {
	var perr error
	err := c.raw.Control(func(fd uintptr) {
		fds := []unix.PollFd{{Fd: int32(fd), Events: events}}
		for {
			if _, perr = unix.Poll(fds, -1); perr != unix.EINTR {
				return
			}
		}
	})
	if err != nil {
		return err
	}
	if perr != nil {
		return os.NewSyscallError("poll", perr)
	}
	return nil
}

// Close shuts the socket down (waking a read or write blocked on it in another
// goroutine), closes it and removes it from its set.
func (c *sockConn) Close() error {
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
func (c *sockConn) LocalAddr() net.Addr { return c.local }

// RemoteAddr is the server's address.
func (c *sockConn) RemoteAddr() net.Addr { return c.remote }

// SetDeadline and its two variants are not supported: a waiting thread is
// stopped by Close. openDB uses this connection only for DSNs without read and
// write timeouts, so the driver never sets one.
func (c *sockConn) SetDeadline(time.Time) error      { return errNoDeadline }
func (c *sockConn) SetReadDeadline(time.Time) error  { return errNoDeadline }
func (c *sockConn) SetWriteDeadline(time.Time) error { return errNoDeadline }

var errNoDeadline = fmt.Errorf("bench: deadlines are not supported on a run's connections")
