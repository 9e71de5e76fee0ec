package testhosts

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"strings"
)

// Network is a private network of test hosts: a bridge on this machine
// (its address .1 of a /24 no route of the machine covers) and, per host, a
// network namespace joined to it by a veth pair. A host sees only its own
// loopback and the bridge, so what runs in it reaches the other test hosts
// and this machine, nothing else.
type Network struct {
	prefix string // "10.231.7." (the /24)
	bridge string
	tag    string // names the links and namespaces of this network
	hosts  int
}

// NetHost is one test host of a Network.
type NetHost struct {
	IP string // its address on the bridge
	NS string // its network namespace (ip netns)
}

// NewNetwork makes a private network of test hosts (root and the ip command
// needed; the test fails without them) and removes it when the test ends.
func NewNetwork(t T) *Network {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatalf("test hosts in network namespaces need root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Fatalf("test hosts in network namespaces need the ip command (apt-get install iproute2)")
	}
	n := &Network{tag: fmt.Sprintf("pb%d", os.Getpid()%100000)}
	n.bridge = n.tag + "br"
	for try := 0; ; try++ {
		p := fmt.Sprintf("10.%d.%d.", 200+rand.IntN(50), rand.IntN(250))
		if !routed(p + "1") {
			n.prefix = p
			break
		}
		if try > 50 {
			t.Fatalf("no free 10.x.y.0/24 for the test hosts' network")
		}
	}
	t.Cleanup(n.remove)
	ipCmd(t, "link", "add", n.bridge, "type", "bridge")
	ipCmd(t, "addr", "add", n.prefix+"1/24", "dev", n.bridge)
	ipCmd(t, "link", "set", n.bridge, "up")
	return n
}

// routed reports whether the machine is already on a network that holds ip
// (a route to it that is not through a gateway; a machine with no route to
// it at all, not even a default one, is not).
func routed(ip string) bool {
	out, err := exec.Command("ip", "-o", "route", "get", ip).Output()
	return err == nil && !strings.Contains(string(out), " via ")
}

// Addr is this machine's address on the network (the bridge's).
func (n *Network) Addr() string { return n.prefix + "1" }

// Host adds a test host to the network.
func (n *Network) Host(t T) *NetHost {
	t.Helper()
	n.hosts++
	id := n.hosts + 1 // .2, .3, ...
	h := &NetHost{IP: fmt.Sprintf("%s%d", n.prefix, id), NS: fmt.Sprintf("%sh%d", n.tag, id)}
	veth := fmt.Sprintf("%sv%d", n.tag, id)
	ipCmd(t, "netns", "add", h.NS)
	ipCmd(t, "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", h.NS)
	ipCmd(t, "link", "set", veth, "master", n.bridge, "up")
	ipCmd(t, "-n", h.NS, "addr", "add", h.IP+"/24", "dev", "eth0")
	ipCmd(t, "-n", h.NS, "link", "set", "eth0", "up")
	ipCmd(t, "-n", h.NS, "link", "set", "lo", "up")
	return h
}

// Command is name run with args in the host's network namespace.
func (h *NetHost) Command(name string, args ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", h.NS, name}, args...)...)
}

// Dial reports whether port of the host answers from this machine.
func (h *NetHost) Dial(port int) bool {
	c, err := net.Dial("tcp", net.JoinHostPort(h.IP, fmt.Sprint(port)))
	if err == nil {
		c.Close()
	}
	return err == nil
}

// remove deletes the hosts' namespaces (their veth pairs go with them) and
// the bridge. The daemons in them must be gone first (their Cleanups run
// before this one: they were registered later).
func (n *Network) remove() {
	for id := 2; id <= n.hosts+1; id++ {
		_ = exec.Command("ip", "link", "del", fmt.Sprintf("%sv%d", n.tag, id)).Run()
		_ = exec.Command("ip", "netns", "del", fmt.Sprintf("%sh%d", n.tag, id)).Run()
	}
	_ = exec.Command("ip", "link", "del", n.bridge).Run()
}

func ipCmd(t T, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}
