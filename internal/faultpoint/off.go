//go:build !faults

package faultpoint

// Enabled reports whether this binary was built with the fault points
// (the "faults" build tag).
const Enabled = false

// Hit marks that the program reached point; without the "faults" build tag
// it does nothing.
func Hit(point string) {}

// TakenPort returns 0; without the "faults" build tag no port is taken.
func TakenPort() int { return 0 }

// Hang does nothing; without the "faults" build tag no server hangs.
func Hang(pid int) {}
