package build

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// FarmHost is one entry of a distcc host list (DISTCC_HOSTS syntax).
type FarmHost struct {
	Spec string // as written: "127.0.0.2/4,lzo"
	// Name is the host as distcc's log names it: "localhost", "127.0.0.2",
	// "build1" (an SSH host's without its user).
	Name string
	// Addr is host:port of a TCP host, which a build checks it can reach;
	// "" for localhost and SSH hosts (@host, user@host).
	Addr string
	// Slots is the most compiles distcc sends the host at once: the entry's
	// /LIMIT, else distcc's default (4; 2 for localhost).
	Slots int
}

// distccPort is distccd's default TCP port.
const distccPort = 3632

// ParseDistccHosts reads a distcc host list: entries separated by white
// space, each localhost[/LIMIT], HOST[:PORT][/LIMIT][,OPTIONS] or
// [USER]@HOST[/LIMIT][,OPTIONS] (SSH); options of distcc's own
// (--randomize, --localslots=N, +zeroconf) are kept as they are and name no
// host. Errors name the entry that is not one (an empty host, a port or a
// limit that is not a positive number).
func ParseDistccHosts(spec string) ([]FarmHost, error) {
	var hosts []FarmHost
	for _, e := range strings.Fields(spec) {
		if strings.HasPrefix(e, "--") || strings.HasPrefix(e, "+") {
			continue
		}
		h := FarmHost{Spec: e}
		rest, opts, _ := strings.Cut(e, ",")
		if opts != "" {
			for _, o := range strings.Split(opts, ",") {
				if o != "lzo" && o != "cpp" && o != "auth" && !strings.HasPrefix(o, "auth=") {
					return nil, fmt.Errorf("distcc host %q: option %q is not one of distcc's (lzo, cpp, auth); distcc would drop the host", e, o)
				}
			}
		}
		rest, limit, hasLimit := strings.Cut(rest, "/")
		ssh := strings.Contains(rest, "@")
		if ssh {
			rest = rest[strings.LastIndex(rest, "@")+1:]
		}
		port := distccPort
		if !ssh {
			hostPart, portPart, hasPort := strings.Cut(rest, ":")
			if strings.HasPrefix(rest, "[") { // [IPv6]:PORT
				end := strings.Index(rest, "]")
				if end < 0 {
					return nil, fmt.Errorf("distcc host %q: no ] after the IPv6 address ([::1]:3632/4)", e)
				}
				hostPart, portPart, hasPort = rest[:end+1], strings.TrimPrefix(rest[end+1:], ":"), len(rest) > end+1
			}
			if hasPort {
				n, err := strconv.Atoi(portPart)
				if err != nil || n < 1 || n > 65535 {
					return nil, fmt.Errorf("distcc host %q: port %q is not a port number (HOST:PORT/LIMIT, such as build1:3632/8)", e, portPart)
				}
				rest, port = hostPart, n
			}
		}
		if rest == "" {
			return nil, fmt.Errorf("distcc host %q names no host (HOST/LIMIT, such as build1/8 or localhost/2)", e)
		}
		h.Name = rest
		h.Slots = 4
		if rest == "localhost" {
			h.Slots = 2
		}
		if hasLimit {
			n, err := strconv.Atoi(limit)
			if err != nil || n < 1 {
				return nil, fmt.Errorf("distcc host %q: limit %q is not a positive number of compiles (HOST/LIMIT, such as build1/8)", e, limit)
			}
			h.Slots = n
		}
		if !ssh && rest != "localhost" {
			h.Addr = net.JoinHostPort(strings.Trim(rest, "[]"), strconv.Itoa(port))
		}
		hosts = append(hosts, h)
	}
	if len(hosts) == 0 && !strings.Contains(spec, "+zeroconf") {
		return nil, fmt.Errorf("distcc hosts %q name no host (such as \"localhost/2 build1/8\")", spec)
	}
	return hosts, nil
}

// FarmSlots is the compiles a host list takes at once: the default number
// of parallel build jobs with a farm.
func FarmSlots(hosts []FarmHost) int {
	n := 0
	for _, h := range hosts {
		n += h.Slots
	}
	return n
}

// unreachable dials each TCP host of hosts (at most timeout each, all at
// once) and returns why for each one that did not answer, by Addr.
func unreachable(ctx context.Context, hosts []FarmHost, timeout time.Duration) map[string]string {
	var mu sync.Mutex
	var wg sync.WaitGroup
	down := map[string]string{}
	for _, h := range hosts {
		if h.Addr == "" {
			continue
		}
		wg.Add(1)
		go func(addr string) {
			defer wg.Done()
			d := net.Dialer{Timeout: timeout}
			c, err := d.DialContext(ctx, "tcp", addr)
			if err == nil {
				c.Close()
				return
			}
			why := err.Error()
			if oe, ok := err.(*net.OpError); ok && oe.Err != nil {
				why = oe.Err.Error()
			}
			mu.Lock()
			down[addr] = why
			mu.Unlock()
		}(h.Addr)
	}
	wg.Wait()
	return down
}

// checkFarm says, before a build, which farm hosts do not answer and which
// answer again (distcc), or that this machine has no iceccd to take its
// compiles (icecc): the compiles then go to the other hosts or run on this
// machine, a problem of the machine's, never the revision's. It returns
// the build's environment edited for that: with no iceccd, ICECC=no (icecc
// runs the compiler itself) and no ICECC_TEST_SOCKET (icecc fails every
// compile when that socket is missing).
func (b *Builder) checkFarm(ctx context.Context, commit string, env []string) []string {
	if b.farmDown == nil {
		b.farmDown = map[string]bool{}
	}
	if b.Recipe.Icecc {
		sock := IceccSocket()
		_, err := os.Stat(sock)
		switch {
		case err != nil && !b.farmDown[sock]:
			b.warnf("build %.10s: icecc: no iceccd on this machine (%s is missing): every compile runs here (start it: systemctl start iceccd; the machine's problem, not the revision's)", commit, sock)
		case err == nil && b.farmDown[sock]:
			b.logf("build %.10s: icecc: iceccd is back (%s)", commit, sock)
		}
		b.farmDown[sock] = err != nil
		if err != nil {
			var kept []string
			for _, e := range env {
				if !strings.HasPrefix(e, "ICECC_TEST_SOCKET=") && !strings.HasPrefix(e, "ICECC=") {
					kept = append(kept, e)
				}
			}
			env = append(kept, "ICECC=no")
		}
	}
	if b.Recipe.DistccHosts == "" {
		return env
	}
	hosts, err := ParseDistccHosts(b.Recipe.DistccHosts)
	if err != nil {
		return env // the command line checked it
	}
	down := unreachable(ctx, hosts, 2*time.Second)
	for _, h := range hosts {
		if h.Addr == "" {
			continue
		}
		why, isDown := down[h.Addr]
		switch {
		case isDown && !b.farmDown[h.Addr]:
			b.warnf("build %.10s: distcc host %s does not answer (%s): its compiles go to other hosts, or run on this machine when none answers (the machine's problem, not the revision's)", commit, h.Addr, why)
		case !isDown && b.farmDown[h.Addr]:
			b.logf("build %.10s: distcc host %s answers again (distcc itself may keep its compiles here for a minute: its backoff)", commit, h.Addr)
		}
		b.farmDown[h.Addr] = isDown
	}
	return env
}

// IceccSocket is where icecc finds this machine's iceccd, as icecc itself
// looks: $ICECC_TEST_SOCKET (icecream's own variable for a daemon at
// another path), /var/run/icecc/iceccd.socket or /var/run/iceccd.socket
// for a system daemon, else $HOME/.iceccd.socket (a user's own).
func IceccSocket() string {
	if s := os.Getenv("ICECC_TEST_SOCKET"); s != "" {
		return s
	}
	const system = "/var/run/icecc/iceccd.socket"
	for _, p := range []string{system, "/var/run/iceccd.socket"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if home, err := os.UserHomeDir(); err == nil {
		p := filepath.Join(home, ".iceccd.socket")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return system
}

// Compiles is where a build's compiles went: from ccache's statistics log
// (CCACHE_STATSLOG) and distcc's (DISTCC_LOG) or icecc's (ICECC_LOGFILE).
type Compiles struct {
	CacheHits, CacheMisses int // ccache's, when ccache ran
	// Hosts counts the compiles each host did ("localhost" is this
	// machine, with the compiles that fell back to it).
	Hosts map[string]int
	// Moved counts compiles that a farm host failed (it did not answer,
	// or it died in the middle of the compile) and that the launcher sent
	// to another host or ran here; Failures counts them by the host that
	// failed, and Why is that host's last reason ("Connection refused").
	Moved    int
	Failures map[string]int
	Why      map[string]string
	// NoHost counts compiles distcc ran here because no farm host was
	// available (every one backed off after failures).
	NoHost int
}

var (
	distccDone     = regexp.MustCompile(`^distcc\[(\d+)\] compile (.+) on (\S+) completed ok$`)
	distccExec     = regexp.MustCompile(`^distcc\[(\d+)\] exec on (\S+): `)
	distccNoHost   = regexp.MustCompile(`^distcc\[(\d+)\] \(dcc_build_somewhere\) Warning: failed to distribute, running locally instead`)
	distccConnect  = regexp.MustCompile(`^distcc\[(\d+)\] (?:\(\S+\) )?ERROR: (?:(?:nonblocking )?connect to \S+ failed: (.+)|failed to (resolve) host .*)$`)
	distccErrorLog = regexp.MustCompile(`^distcc\[(\d+)\] (?:\(\S+\) )?ERROR: `)
	// distccCompileFailed is the compiler's own failure on a host: distcc
	// runs the compile here again, and the error is the revision's.
	distccCompileFailed = regexp.MustCompile(`ERROR: compile \S+ on \S+ failed`)
)

// hostName is a distcc host as its log names it, without /LIMIT or options.
func hostName(h string) string {
	h, _, _ = strings.Cut(h, ",")
	h, _, _ = strings.Cut(h, "/")
	return h
}

var (
	iceccAsk       = regexp.MustCompile(`^ICECC\[(\d+)\] [^:]+:\d+:\d+: asking for host to use`)
	iceccHost      = regexp.MustCompile(`^ICECC\[(\d+)\] [^:]+:\d+:\d+: Have to use host (\S+?)(?::\d+)? `)
	iceccHere      = regexp.MustCompile(`^ICECC\[(\d+)\] [^:]+:\d+:\d+: (?:building myself|<building_local>)`)
	iceccException = regexp.MustCompile(`^ICECC\[(\d+)\] [^:]+:\d+:\d+: (?:got exception|local build forced by remote exception:) Error \d+ - (.+?)(?: \(\S+\))?\s*$`)
)

// readCompiles reads the logs a build's compiler launchers wrote (any may
// be missing: "" or absent). Each distcc process logs as distcc[PID]; a
// compile whose host failed is executed again on another ("exec on").
// Each icecc process logs as ICECC[PID] (ICECC_DEBUG=debug): the host the
// scheduler gave it, or that it builds here, and the exception that sent a
// compile from a host back here.
func readCompiles(ccacheLog, distccLog, iceccLog string) Compiles {
	c := Compiles{Hosts: map[string]int{}, Failures: map[string]int{}, Why: map[string]string{}}
	scan := func(path string, line func(string)) {
		if path == "" {
			return
		}
		f, err := os.Open(path)
		if err != nil {
			return
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line(sc.Text())
		}
	}
	scan(ccacheLog, func(l string) {
		switch l {
		case "direct_cache_hit", "preprocessed_cache_hit":
			c.CacheHits++
		case "cache_miss":
			c.CacheMisses++
		}
	})
	// Per pid: the host it last sent its compile to, and the host's failure
	// since then ("" none: a compile distcc runs again here after the
	// compiler failed on the host is the revision's, not the host's).
	exec := map[string]string{}
	why := map[string]string{}
	moved := map[string]bool{}
	scan(distccLog, func(l string) {
		if m := distccDone.FindStringSubmatch(l); m != nil {
			c.Hosts[hostName(m[3])]++
			delete(exec, m[1]) // the pid may come back for another compile
			delete(moved, m[1])
			return
		}
		if m := distccExec.FindStringSubmatch(l); m != nil {
			pid, host := m[1], hostName(m[2])
			if prev, ok := exec[pid]; ok && prev != "localhost" && why[pid] != "" {
				c.Failures[prev]++
				c.Why[prev] = why[pid]
				if !moved[pid] {
					moved[pid] = true
					c.Moved++
				}
			}
			exec[pid] = host
			why[pid] = ""
			return
		}
		if m := distccNoHost.FindStringSubmatch(l); m != nil {
			c.NoHost++
			return
		}
		if m := distccConnect.FindStringSubmatch(l); m != nil {
			why[m[1]] = strings.TrimSpace(m[2])
			if m[3] != "" {
				why[m[1]] = "not found (DNS)"
			}
			return
		}
		if m := distccErrorLog.FindStringSubmatch(l); m != nil && !distccCompileFailed.MatchString(l) && why[m[1]] == "" {
			why[m[1]] = "lost the connection"
		}
	})
	// Per icecc pid: where its compile is now; a pid that asks for a host
	// again (it came back for another compile) counts the one before.
	place := map[string]string{}
	finish := func(pid string) {
		if h, ok := place[pid]; ok {
			c.Hosts[h]++
			delete(place, pid)
		}
	}
	scan(iceccLog, func(l string) {
		setPlace := func(pid, host string) {
			if prev, ok := place[pid]; ok && prev != "localhost" && prev != host && why[pid] != "" {
				c.Failures[prev]++
				c.Why[prev] = why[pid]
				c.Moved++
			}
			place[pid] = host
			why[pid] = ""
		}
		if m := iceccAsk.FindStringSubmatch(l); m != nil {
			finish(m[1])
		} else if m := iceccHost.FindStringSubmatch(l); m != nil {
			setPlace(m[1], m[2])
		} else if m := iceccHere.FindStringSubmatch(l); m != nil {
			setPlace(m[1], "localhost")
		} else if m := iceccException.FindStringSubmatch(l); m != nil && !strings.Contains(m[2], "recompiling locally") {
			// Not the stdout/stderr workaround: the host compiled, and icecc
			// compiles again here for the compiler's own diagnostics.
			why[m[1]] = m[2]
		}
	})
	for pid := range place {
		finish(pid)
	}
	return c
}

// Distributed is the number of compiles a farm host did.
func (c Compiles) Distributed() int {
	n := 0
	for h, k := range c.Hosts {
		if h != "localhost" {
			n += k
		}
	}
	return n
}

// String is the compiles in words: "compiles: 12 from ccache, 31 compiled:
// 127.0.0.2 14, 127.0.0.3 11, this machine 6; 4 moved after a farm host
// failed: 127.0.0.2 Connection refused x4"; "" when nothing was logged.
func (c Compiles) String() string {
	var parts []string
	if c.CacheHits > 0 || c.CacheMisses > 0 {
		parts = append(parts, fmt.Sprintf("%d from ccache", c.CacheHits))
	}
	if len(c.Hosts) > 0 {
		total := 0
		var hosts []string
		for h := range c.Hosts {
			total += c.Hosts[h]
			if h != "localhost" {
				hosts = append(hosts, h)
			}
		}
		sort.Strings(hosts)
		var each []string
		for _, h := range hosts {
			each = append(each, fmt.Sprintf("%s %d", h, c.Hosts[h]))
		}
		if n := c.Hosts["localhost"]; n > 0 {
			each = append(each, fmt.Sprintf("this machine %d", n))
		}
		s := fmt.Sprintf("%d compiled: %s", total, strings.Join(each, ", "))
		if c.Moved > 0 {
			var hosts []string
			for h := range c.Failures {
				hosts = append(hosts, h)
			}
			sort.Strings(hosts)
			var fails []string
			for _, h := range hosts {
				fails = append(fails, fmt.Sprintf("%s %s x%d", h, c.Why[h], c.Failures[h]))
			}
			s += fmt.Sprintf("; %d moved after a farm host failed: %s", c.Moved, strings.Join(fails, ", "))
		}
		if c.NoHost > 0 {
			s += fmt.Sprintf("; %d here with no farm host available", c.NoHost)
		}
		parts = append(parts, s)
	} else if c.CacheMisses > 0 {
		parts = append(parts, fmt.Sprintf("%d compiled", c.CacheMisses))
	}
	if len(parts) == 0 {
		return ""
	}
	return "compiles: " + strings.Join(parts, ", ")
}
