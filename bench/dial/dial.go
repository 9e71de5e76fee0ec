package dial

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
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
// poll(2) like libmysqlclient (but the first read after a command polls before
// it reads, see sockReader.Read). Not a blocking read(2): a reader blocked there is
// also woken each time the server consumes what the client sent (the socket's
// write-space wake-up), which doubled the context switches per statement.
//
// A thread waiting in poll(2) cannot be interrupted by a deadline or a context,
// so statements run with context.WithoutCancel(runCtx) (which also spares the
// driver a watcher hand-off per command), and a run cancels them all at once
// instead: the dialler records every connection of the run, and when the run's
// context ends it shuts them down (shutdown(2) wakes the poll; close(2) would
// not), which makes any waiting read or write return at once.

// Set is the dialler and registry of one run's connections.
type Set struct {
	mu     sync.Mutex
	conns  map[*sockConn]struct{}
	closed bool
}

func NewSet() *Set {
	return &Set{conns: map[*sockConn]struct{}{}}
}

// dial opens a connection, as go-sql-driver's Config.DialFunc.
func (s *Set) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
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

// CloseAll shuts down every connection of the run and refuses new ones. A
// thread blocked on one of them returns with an error; the connections are
// closed by their owners (or right here when nobody uses them any more).
func (s *Set) CloseAll() {
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
// waiting for the server in poll(2). It holds the descriptor itself rather than
// an *os.File: the os package's raw-connection calls take a closure, whose
// captured results escape to the heap, and a lock per call: two thirds of the
// client's allocations per point select.
//
// state counts the calls using fd (Read, Write, wait, Close's shutdown) and has
// closedBit set once Close ran: the descriptor is closed by whoever leaves it
// unused after that, so Close from another goroutine (Set.CloseAll) is safe
// while the owner is inside a call, and the number cannot be reused under it.
type sockConn struct {
	fd            int
	state         atomic.Int64
	rpfd, wpfd    [1]unix.PollFd // wait's argument for Read and Write, kept to spare an allocation per wait
	sent          atomic.Bool    // written to since the last read from the socket
	r             *bufio.Reader
	local, remote net.Addr
	set           *Set
	once          sync.Once
}

const closedBit = 1 << 62

// errConnClosed is what calls on a closed sockConn return.
var errConnClosed = fmt.Errorf("use of closed connection: %w", net.ErrClosed)

// newSockConn takes nc's socket over: the descriptor is duplicated (close-on-exec,
// non-blocking) and nc closed (its poller registration goes with it). Socket
// options already set on nc (TCP_NODELAY) belong to the socket and stay.
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
		dup, derr = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0)
	}); err != nil {
		derr = err
	}
	local, remote := nc.LocalAddr(), nc.RemoteAddr()
	nc.Close()
	if derr != nil {
		return nil, fmt.Errorf("take over connection to %s: %w", remote, derr)
	}
	if err := unix.SetNonblock(dup, true); err != nil {
		unix.Close(dup)
		return nil, fmt.Errorf("connection to %s: %w", remote, err)
	}
	c := &sockConn{fd: dup, local: local, remote: remote}
	c.r = bufio.NewReaderSize(sockReader{c}, readBufferSize)
	return c, nil
}

// acquire marks a call using the descriptor; false when the connection is closed.
func (c *sockConn) acquire() bool {
	for {
		s := c.state.Load()
		if s&closedBit != 0 {
			return false
		}
		if c.state.CompareAndSwap(s, s+1) {
			return true
		}
	}
}

// release ends a call; the last one after Close closes the descriptor.
func (c *sockConn) release() {
	if c.state.Add(-1) == closedBit {
		_ = unix.Close(c.fd)
	}
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
	c := r.c
	if !c.acquire() {
		return 0, errConnClosed
	}
	defer c.release()
	if c.sent.Swap(false) {
		// The first read after a command: the reply is almost never there yet,
		// so wait before trying (libmysqlclient tries first, and pays a
		// recvfrom(2) that fails with EAGAIN per statement).
		if err := c.wait(&c.rpfd, unix.POLLIN); err != nil {
			return 0, err
		}
	}
	for {
		n, errno := recv(c.fd, b)
		switch errno {
		case 0:
			if n == 0 {
				return 0, io.EOF
			}
			return n, nil
		case syscall.EINTR:
		case syscall.EAGAIN:
			if err := c.wait(&c.rpfd, unix.POLLIN); err != nil {
				return 0, err
			}
		default:
			return 0, os.NewSyscallError("recvfrom", errno)
		}
	}
}

// recv is recvfrom(2) without an address, as libmysqlclient's recv. It never
// blocks (the socket is non-blocking), so it is a raw system call.
func recv(fd int, b []byte) (int, syscall.Errno) {
	n, _, errno := syscall.RawSyscall6(syscall.SYS_RECVFROM, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), 0, 0, 0)
	return int(n), errno
}

// send is sendto(2) without an address and with MSG_NOSIGNAL (a closed peer is
// EPIPE, not SIGPIPE), as libmysqlclient's send; raw like recv.
func send(fd int, b []byte) (int, syscall.Errno) {
	n, _, errno := syscall.RawSyscall6(syscall.SYS_SENDTO, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), syscall.MSG_NOSIGNAL, 0, 0)
	return int(n), errno
}

// Write writes all of b, waiting for POLLOUT when the socket's buffer is full.
func (c *sockConn) Write(b []byte) (int, error) {
	if !c.acquire() {
		return 0, errConnClosed
	}
	defer c.release()
	done := 0
	for done < len(b) {
		n, errno := send(c.fd, b[done:])
		switch errno {
		case 0:
			done += n
			c.sent.Store(true)
		case syscall.EINTR:
		case syscall.EAGAIN:
			if err := c.wait(&c.wpfd, unix.POLLOUT); err != nil {
				return done, err
			}
		default:
			return done, os.NewSyscallError("sendto", errno)
		}
	}
	return done, nil
}

// wait blocks the calling OS thread in poll(2) until the socket has events (or
// an error or hang-up, which the next read or write reports). pfd is the
// caller's own (Read's or Write's: a net.Conn may be read and written at once).
// Call inside acquire/release.
func (c *sockConn) wait(pfd *[1]unix.PollFd, events int16) error {
	pfd[0] = unix.PollFd{Fd: int32(c.fd), Events: events}
	for {
		_, err := unix.Poll(pfd[:], -1)
		if err == nil {
			return nil
		}
		if err != unix.EINTR {
			return os.NewSyscallError("poll", err)
		}
	}
}

// Close shuts the socket down (waking a read or write blocked on it in another
// goroutine), closes it once no call uses it and removes it from its set.
func (c *sockConn) Close() error {
	c.once.Do(func() {
		c.state.Add(1) // Close's own use: the descriptor stays open for the shutdown
		c.state.Or(closedBit)
		_ = unix.Shutdown(c.fd, unix.SHUT_RDWR)
		c.release()
		if c.set != nil {
			c.set.mu.Lock()
			delete(c.set.conns, c)
			c.set.mu.Unlock()
		}
	})
	return nil
}

// LocalAddr is the local address of the socket.
func (c *sockConn) LocalAddr() net.Addr { return c.local }

// RemoteAddr is the server's address.
func (c *sockConn) RemoteAddr() net.Addr { return c.remote }

// SetDeadline and its two variants are not supported: a waiting thread is
// stopped by Close. DB uses this connection only for DSNs without read and
// write timeouts, so the driver never sets one.
func (c *sockConn) SetDeadline(time.Time) error      { return errNoDeadline }
func (c *sockConn) SetReadDeadline(time.Time) error  { return errNoDeadline }
func (c *sockConn) SetWriteDeadline(time.Time) error { return errNoDeadline }

var errNoDeadline = fmt.Errorf("bench: deadlines are not supported on a run's connections")
