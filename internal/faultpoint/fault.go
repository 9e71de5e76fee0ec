// Package faultpoint holds the points where the fault suite (scripts/faults)
// kills perfbisect at an exact moment: a checkout's file write, a build step,
// a datadir preparation, a measured window, a store write. A store write
// takes under a millisecond, so no timed kill from outside can hit it; a
// point inside the program can.
//
// In a normal build Hit does nothing (the compiler removes it). Built with
// the tag "faults" (go build -tags faults), Hit reads PERFBISECT_FAULT, of
// the form POINT:N or POINT:N:DELAY (DELAY a Go duration, default 0), and
// kills its own process with SIGKILL DELAY after the Nth time the program
// reaches POINT: no deferred function runs, no file is closed, as when the
// OOM killer or a power cut ends it. The point "port-taken" is not a kill:
// the Nth server start gets a loopback port that another socket holds, as
// when a process binds the chosen port between its choice and the server's
// bind (see TakenPort); nor is "server-hang": the Nth server started is
// stopped (SIGSTOP) before it accepts connections, a server that never gets
// ready (see Hang).
package faultpoint

// Points are the names Hit is called with, in the order a revision meets
// them.
var Points = []string{"checkout", "configure", "build", "install", "datadir", "run", "store-write"}
