package dial

import (
	"context"
	"errors"
	"io"
	"net"
	"path/filepath"
	"testing"
	"time"
)

// TestSockConn runs a sockConn over a real Unix socket: a round trip, a Read
// blocked in poll(2) that Close from another goroutine (a cancelled run's
// CloseAll) wakes, the descriptor released once the Read is out, and calls
// after Close failing with net.ErrClosed.
func TestSockConn(t *testing.T) {
	path, ln := listenUnix(t)
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			accepted <- c
		}
		close(accepted)
	}()
	set := NewSet()
	nc, err := set.Dial(context.Background(), "unix", path)
	if err != nil {
		t.Fatal(err)
	}
	c := nc.(*sockConn)
	peer := <-accepted
	if peer == nil {
		t.Fatal("accept failed")
	}
	defer peer.Close()

	if _, err := c.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4)
	if _, err := io.ReadFull(peer, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("peer read %q, %v", buf, err)
	}
	go func() {
		time.Sleep(50 * time.Millisecond) // the client's Read is waiting by then
		peer.Write([]byte("pong"))
	}()
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "pong" {
		t.Fatalf("read %q, %v", buf, err)
	}

	done := make(chan error, 1)
	go func() {
		_, err := c.Read(buf)
		done <- err
	}()
	time.Sleep(100 * time.Millisecond)
	set.CloseAll()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("Read on a closed connection returned no error")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Read still blocked 5s after CloseAll")
	}
	if s := c.state.Load(); s != closedBit {
		t.Errorf("state after Close and the Read's return = %#x, want closedBit alone (descriptor closed)", s)
	}
	if _, err := c.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Write after Close: %v, want net.ErrClosed", err)
	}
	if _, err := set.Dial(context.Background(), "unix", path); !errors.Is(err, net.ErrClosed) {
		t.Errorf("dial after CloseAll: %v, want net.ErrClosed", err)
	}
	if len(set.conns) != 0 {
		t.Errorf("%d connections left in the set", len(set.conns))
	}
}

// TestSockConnConcurrentReadWrite reads and writes one sockConn from two
// goroutines at once, as a net.Conn allows (run it with -race): the peer echoes
// what it gets, in pieces large enough to fill the socket's buffers, so both
// sides wait in poll(2) at times.
func TestSockConnConcurrentReadWrite(t *testing.T) {
	path, ln := listenUnix(t)
	go func() {
		p, err := ln.Accept()
		if err != nil {
			return
		}
		defer p.Close()
		io.Copy(p, p) // echo
	}()
	set := NewSet()
	defer set.CloseAll()
	c, err := set.Dial(context.Background(), "unix", path)
	if err != nil {
		t.Fatal(err)
	}
	// total is whole chunks: the reader reads all that was written (a
	// partial last chunk left 208 KiB unread once, which the echo could not
	// hand back, so the writer waited until the deadline closed the socket).
	chunk := make([]byte, 300<<10)
	total := 28 * len(chunk)
	for i := range chunk {
		chunk[i] = byte(i)
	}
	werr := make(chan error, 1)
	go func() {
		for sent := 0; sent < total; sent += len(chunk) {
			if _, err := c.Write(chunk); err != nil {
				werr <- err
				return
			}
		}
		werr <- nil
	}()
	got := make([]byte, total)
	deadline := time.AfterFunc(time.Minute, func() { set.CloseAll() })
	defer deadline.Stop()
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatalf("read the echo: %v", err)
	}
	if err := <-werr; err != nil {
		t.Fatalf("write: %v", err)
	}
	for i, b := range got {
		if b != byte(i%len(chunk)) {
			t.Fatalf("byte %d of the echo is %d, want %d", i, b, byte(i%len(chunk)))
		}
	}
}

// listenUnix listens on a Unix socket in a test directory, closed at the
// test's end.
func listenUnix(t *testing.T) (string, net.Listener) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return path, ln
}
