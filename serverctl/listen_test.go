package serverctl

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// listeningAddrs lists the TCP addresses (ip:port, IPv4 and IPv6 as the
// kernel writes them in /proc/net/tcp{,6}, hex) on which process pid has a
// socket in the LISTEN state: every listener of the server, plugins' ports
// included.
func listeningAddrs(pid int) ([]string, error) {
	inodes := map[string]bool{}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return nil, err
	}
	for _, fd := range fds {
		link, err := os.Readlink(filepath.Join(fmt.Sprintf("/proc/%d/fd", pid), fd.Name()))
		if err == nil && strings.HasPrefix(link, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
		}
	}
	var out []string
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(table)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		sc.Scan() // header
		for sc.Scan() {
			fs := strings.Fields(sc.Text())
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			if len(fs) >= 10 && fs[3] == "0A" && inodes[fs[9]] {
				out = append(out, fs[1])
			}
		}
		f.Close()
	}
	return out, nil
}

// loopback reports whether a /proc/net/tcp{,6} local address (hex ip:port)
// is 127.0.0.1 or ::1.
func loopback(addr string) bool {
	ip, _, _ := strings.Cut(addr, ":")
	switch len(ip) {
	case 8: // IPv4, little-endian: 0100007F is 127.0.0.1
		v, err := strconv.ParseUint(ip, 16, 32)
		return err == nil && v&0xff == 127
	case 32: // IPv6 ::1 as four little-endian words
		return ip == "00000000000000000000000001000000"
	}
	return false
}

// TestListeningAddrs: the check sees a listener on every address of this
// very process and tells loopback from the rest.
func TestListeningAddrs(t *testing.T) {
	all, err := net.Listen("tcp4", "0.0.0.0:0")
	if err != nil {
		t.Skip("cannot listen:", err)
	}
	defer all.Close()
	lo, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lo.Close()
	addrs, err := listeningAddrs(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	var loop, other int
	for _, a := range addrs {
		if loopback(a) {
			loop++
		} else {
			other++
		}
	}
	if loop < 1 || other < 1 {
		t.Errorf("listeners of this process: %v (want one loopback, one any-address)", addrs)
	}
	for addr, want := range map[string]bool{"0100007F:1F90": true, "00000000:0CEA": false, "0101A8C0:0CEA": false,
		"00000000000000000000000001000000:0CEA": true, "00000000000000000000000000000000:0CEA": false} {
		if loopback(addr) != want {
			t.Errorf("loopback(%s) = %v", addr, !want)
		}
	}
}
