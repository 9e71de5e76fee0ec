package testhosts

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// ObjectStore is nginx serving a directory over HTTP on a loopback address
// with WebDAV's PUT (what it is sent it writes to a temporary file, then
// renames into place) and GET: the plain HTTP store a shared build cache
// uses.
type ObjectStore struct {
	URL string // "http://127.0.0.13:PORT/builds"
	Dir string // what it serves (the files under /builds)

	cmd  *exec.Cmd
	done chan struct{}
	log  string
}

// StartObjectStore starts nginx on host (a loopback address) at a free
// port and waits until it answers; stopped when the test ends.
func StartObjectStore(t T, host string) *ObjectStore {
	t.Helper()
	nginx, err := exec.LookPath("nginx")
	if err != nil {
		t.Fatalf("nginx not found (apt-get install nginx-light)")
	}
	dir, err := os.MkdirTemp("", "perfbisect-store-")
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	data := filepath.Join(dir, "data", "builds")
	for _, d := range []string{data, filepath.Join(dir, "tmp"), filepath.Join(dir, "logs")} {
		if err := os.MkdirAll(d, 0o777); err != nil {
			t.Fatalf("%v", err)
		}
		_ = os.Chmod(d, 0o777) // nginx's workers run as nobody
	}
	_ = os.Chmod(dir, 0o755)
	_ = os.Chmod(filepath.Join(dir, "data"), 0o777)
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatalf("a port on %s: %v", host, err)
	}
	addr := l.Addr().String()
	l.Close()
	conf := fmt.Sprintf(`daemon off;
worker_processes 1;
pid %[1]s/nginx.pid;
error_log %[1]s/logs/error.log info;
user nobody nogroup;
events { worker_connections 64; }
http {
	access_log %[1]s/logs/access.log;
	client_body_temp_path %[1]s/tmp;
	client_max_body_size 0;
	server {
		listen %[2]s;
		root %[1]s/data;
		location /builds/ {
			dav_methods PUT;
			create_full_put_path on;
			dav_access user:rw group:r all:r;
		}
	}
}
`, dir, addr)
	confPath := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		t.Fatalf("%v", err)
	}
	s := &ObjectStore{URL: "http://" + addr + "/builds", Dir: data, done: make(chan struct{}), log: filepath.Join(dir, "logs", "error.log")}
	s.cmd = exec.Command(nginx, "-p", dir, "-c", confPath)
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, _ := os.Create(filepath.Join(dir, "logs", "stderr.log"))
	s.cmd.Stdout, s.cmd.Stderr = out, out
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("nginx: %v", err)
	}
	go func() { _ = s.cmd.Wait(); out.Close(); close(s.done) }()
	t.Cleanup(s.Stop)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return s
		}
		select {
		case <-s.done:
			b, _ := os.ReadFile(filepath.Join(dir, "logs", "stderr.log"))
			e, _ := os.ReadFile(s.log)
			t.Fatalf("nginx exited: %s%s", b, e)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("nginx on %s does not answer after 10s", addr)
		}
	}
}

// Stop kills nginx and its worker (safe to call twice).
func (s *ObjectStore) Stop() {
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	<-s.done
}
