package build

import (
	"bytes"
	"io"
	"regexp"
	"strconv"
)

// makePercent matches the percentage CMake's Makefile generator prints
// ("[ 45%] Building C object ..."); ninjaCount ninja's "[12/345] ...".
var (
	makePercent = regexp.MustCompile(`^\[\s*(\d{1,3})%\]`)
	ninjaCount  = regexp.MustCompile(`^\[(\d+)/(\d+)\]`)
)

// Percent returns the build's progress that one line of build-tool output
// states (0-100), or -1 when it states none.
func Percent(line string) int {
	if m := makePercent.FindStringSubmatch(line); m != nil {
		p, _ := strconv.Atoi(m[1])
		return min(p, 100)
	}
	if m := ninjaCount.FindStringSubmatch(line); m != nil {
		done, _ := strconv.Atoi(m[1])
		total, _ := strconv.Atoi(m[2])
		if total > 0 {
			return min(100*done/total, 100)
		}
	}
	return -1
}

// lineWriter copies a build's output to the log (and raw, for -v) and calls
// onPercent whenever a whole line states a new percentage.
type lineWriter struct {
	log, raw  io.Writer
	onPercent func(int)
	buf       []byte
	last      int
}

func (w *lineWriter) Write(p []byte) (int, error) {
	if _, err := w.log.Write(p); err != nil {
		return 0, err
	}
	if w.raw != nil {
		_, _ = w.raw.Write(p)
	}
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		if pct := Percent(string(w.buf[:i])); pct >= 0 && pct != w.last {
			w.last = pct
			if w.onPercent != nil {
				w.onPercent(pct)
			}
		}
		w.buf = w.buf[i+1:]
	}
	if len(w.buf) > 64<<10 { // a line that never ends says no percentage
		w.buf = w.buf[:0]
	}
	return len(p), nil
}
