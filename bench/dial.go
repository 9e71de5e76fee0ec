package bench

import (
	"bufio"
	"context"
	"net"
	"sync"
)

// Connections of a run, and how statements are cancelled.
//
// A statement given a cancellable context costs database/sql a goroutine per
// result set and go-sql-driver a watcher hand-off per command; on a 2-CPU machine
// shared with mysqld that cost about a fifth of oltp_read_only's throughput. So
// threads run statements with context.WithoutCancel(runCtx), and a run cancels
// them all at once instead: the dialler records every connection of the run, and
// when the run's context ends it closes them, which makes any blocked read or
// write return at once.

// connSet is the dialler and registry of one run's connections.
type connSet struct {
	mu     sync.Mutex
	conns  map[*trackedConn]struct{}
	closed bool
}

func newConnSet() *connSet {
	return &connSet{conns: map[*trackedConn]struct{}{}}
}

// dial opens a connection, as go-sql-driver's Config.DialFunc.
func (s *connSet) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		nc.Close()
		return nil, net.ErrClosed
	}
	tc := &trackedConn{Conn: nc, set: s}
	tc.r = bufio.NewReaderSize(nc, readBufferSize)
	s.conns[tc] = struct{}{}
	return tc, nil
}

// closeAll closes every connection of the run and refuses new ones.
func (s *connSet) closeAll() {
	s.mu.Lock()
	s.closed = true
	conns := make([]*trackedConn, 0, len(s.conns))
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

// trackedConn is a connection that reads through a buffer and leaves its set
// when closed.
type trackedConn struct {
	net.Conn
	r    *bufio.Reader
	set  *connSet
	once sync.Once
}

// Read reads through the connection's buffer.
func (c *trackedConn) Read(b []byte) (int, error) { return c.r.Read(b) }

// Close closes the connection and removes it from its set.
func (c *trackedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.set.mu.Lock()
		delete(c.set.conns, c)
		c.set.mu.Unlock()
	})
	return err
}
