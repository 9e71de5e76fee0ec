// Command checkout-memory prints how much memory perfbisect's checkout of a
// server tree takes: it checks the given revisions out one after another
// into a scratch directory, as a build does, and prints after each the files
// written and the process's peak and current resident size (VmHWM, VmRSS of
// /proc/self/status) and Go heap in use.
//
//	go run ./scripts/checkout-memory REPO REV...
//	go run ./scripts/checkout-memory ~/src/mariadb-10.0 mariadb-10.0.22 mariadb-10.0.26
package main

import (
	"fmt"
	"os"
	"runtime"
	"strings"

	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/build"
	"github.com/perfbisect/perfbisect/internal/app"
)

func main() {
	app.LimitMemory() // as perfbisect does (GOMEMLIMIT= to see it without)
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: checkout-memory REPO REV...")
		os.Exit(2)
	}
	repo, err := bisect.OpenRepo(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "checkout-memory:", err)
		os.Exit(2)
	}
	dir, err := os.MkdirTemp("", "checkout-memory-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "checkout-memory:", err)
		os.Exit(1)
	}
	defer os.RemoveAll(dir)
	for _, ref := range os.Args[2:] {
		c, err := bisect.Resolve(repo, ref)
		if err == nil {
			var n int
			if n, err = build.Checkout(repo, c, dir); err == nil {
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				fmt.Printf("%s: %d files written; %s; Go heap in use %d MiB\n", ref, n, resident(), ms.HeapInuse>>20)
			}
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "checkout-memory:", err)
			os.Exit(1)
		}
	}
}

// resident is this process's VmHWM and VmRSS.
func resident() string {
	b, _ := os.ReadFile("/proc/self/status")
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmHWM") || strings.HasPrefix(l, "VmRSS") {
			out = append(out, strings.Join(strings.Fields(l), " "))
		}
	}
	return strings.Join(out, ", ")
}
