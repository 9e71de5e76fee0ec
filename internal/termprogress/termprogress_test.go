package termprogress

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// TestLiveProgress drives the terminal display as a session does and reads
// what a terminal would show: progress lines whole and on their own lines,
// the bar with the run count against the estimate and the last revision, and
// nothing left of the bar after Close.
func TestLiveProgress(t *testing.T) {
	var term bytes.Buffer
	p := New(&term)
	log := p.Writer(&term)
	fmt.Fprintf(log, "bisecting 24 commits\n")
	for i := 0; i < 3; i++ {
		p.Run("0123456789abcdef")
	}
	fmt.Fprint(log, "endpoints: look 1: ")
	fmt.Fprint(log, "DIFFERENT\n") // one line written in two pieces
	p.Estimate(10)
	p.Run("fedcba9876543210")
	screen := render(term.String())
	t.Logf("terminal:\n%s", screen)
	lines := strings.Split(screen, "\n")
	if len(lines) < 3 || lines[0] != "bisecting 24 commits" || lines[1] != "endpoints: look 1: DIFFERENT" {
		t.Errorf("progress lines mixed with the bar: %q", lines)
	}
	last := lines[len(lines)-1]
	if !strings.Contains(last, "run of fedcba9876") || !regexp.MustCompile(`\b4/10\b`).MatchString(last) {
		t.Errorf("bar line %q: want the last revision and 4/10", last)
	}
	// More runs than estimated: the estimate grows, never past 100%.
	for i := 0; i < 8; i++ {
		p.Run("fedcba9876543210")
	}
	last = lastLine(render(term.String()))
	if m := regexp.MustCompile(`\b(\d+)/(\d+)\b`).FindStringSubmatch(last); m == nil || m[1] != "12" || m[2] != "13" {
		t.Errorf("bar after the estimate: %q", last)
	}
	p.Close()
	if l := lastLine(render(term.String())); strings.TrimSpace(l) != "" {
		t.Errorf("bar left on the terminal after Close: %q", l)
	}
	// The answer after Close (compare's table, through the same writer):
	// its lines, and no bar drawn again under them.
	fmt.Fprintf(log, "the answer\n")
	p.Run("fedcba9876543210")
	screen = render(term.String())
	if !strings.HasSuffix(screen, "the answer\n") || strings.Contains(screen[strings.LastIndex(screen, "the answer"):], "run of") {
		t.Errorf("after Close, the answer and then the bar again:\n%s", screen)
	}
}

// render applies carriage returns and ANSI erase-line codes the way a
// terminal does, line by line.
func render(out string) string {
	out = regexp.MustCompile("\x1b\\[[0-9;]*[A-Za-z]").ReplaceAllString(out, "")
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		var cur []rune
		col := 0
		for _, r := range l {
			if r == '\r' {
				col = 0
				continue
			}
			if col < len(cur) {
				cur[col] = r
			} else {
				cur = append(cur, r)
			}
			col++
		}
		lines = append(lines, strings.TrimRight(string(cur), " "))
	}
	return strings.Join(lines, "\n")
}

func lastLine(s string) string {
	l := strings.Split(s, "\n")
	return l[len(l)-1]
}
