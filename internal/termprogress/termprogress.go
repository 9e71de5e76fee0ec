// Package termprogress is the one-line progress display of a measuring
// command on a terminal (schollz/progressbar): runs measured against the
// session's estimate, the revision of the last run, builds in progress, and
// text lines written around it without mixing with it.
package termprogress

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/perfbisect/perfbisect/build"
)

// Bar is the one-line progress display of a measuring command on a
// terminal: runs measured out of the session's estimate, the revision of the
// last run, elapsed time and the time left at the rate so far (schollz/
// progressbar). Progress lines and stdout rows written through Writer clear
// the bar first and draw it again after, so the two never mix. Commands use
// it only when stderr is a terminal and --quiet is not given; elsewhere the
// progress lines are plain text as before.
type Bar struct {
	mu     sync.Mutex
	bar    *progressbar.ProgressBar
	runs   int
	est    int  // estimated runs of the whole session, 0 until known
	closed bool // Close was called: nothing is drawn any more
}

// IsTerminal reports whether f is a terminal.
func IsTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

// New returns a display drawn on w (the terminal's stderr). Its methods
// are safe for concurrent use.
func New(w io.Writer) *Bar {
	bar := progressbar.NewOptions(-1,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription("runs"),
		progressbar.OptionShowCount(),
		progressbar.OptionSetWidth(24),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionThrottle(0),
		// No spinner goroutine: the bar is drawn only under the mutex, so a
		// progress line can clear it safely.
		progressbar.OptionSetSpinnerChangeInterval(0),
		progressbar.OptionClearOnFinish(),
	)
	return &Bar{bar: bar}
}

// Writer returns w wrapped so that every write clears the bar, writes whole
// lines, and draws the bar again.
func (p *Bar) Writer(w io.Writer) io.Writer {
	return &barWriter{p: p, w: w}
}

type barWriter struct {
	p   *Bar
	w   io.Writer
	buf []byte // an unfinished line
}

func (b *barWriter) Write(data []byte) (int, error) {
	b.p.mu.Lock()
	defer b.p.mu.Unlock()
	b.buf = append(b.buf, data...)
	i := bytes.LastIndexByte(b.buf, '\n')
	if i < 0 {
		return len(data), nil
	}
	if b.p.closed { // the bar is gone: lines go straight through
		_, err := b.w.Write(b.buf[:i+1])
		b.buf = append(b.buf[:0], b.buf[i+1:]...)
		return len(data), err
	}
	_ = b.p.bar.Clear()
	_, err := b.w.Write(b.buf[:i+1])
	b.buf = append(b.buf[:0], b.buf[i+1:]...)
	_ = b.p.bar.RenderBlank()
	return len(data), err
}

// Run counts one measured run of commit.
func (p *Bar) Run(commit string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.runs++
	p.describe(commit)
	_ = p.bar.Add(1)
}

// Estimate sets the session's expected number of runs (the pre-flight
// estimate), which turns the spinner into a bar with a time left.
func (p *Bar) Estimate(runs int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	if runs <= p.runs {
		runs = p.runs + 1 // the session is not over: never a full bar
	}
	p.est = runs
	p.bar.ChangeMax(runs)
	_ = p.bar.RenderBlank()
}

func (p *Bar) describe(commit string) {
	if p.est > 0 && p.runs >= p.est {
		// At or beyond the estimate: grow it (the bar would finish, and
		// clear itself, at 100%).
		p.est = p.runs + 1
		p.bar.ChangeMax(p.est)
	}
	p.bar.Describe(fmt.Sprintf("run of %.10s", commit))
}

// Close removes the bar from the terminal for good: lines written through
// Writer after it go straight to their writer, and Run, Estimate and Build
// draw nothing.
func (p *Bar) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.closed = true
	_ = p.bar.Clear()
	_ = p.bar.Exit()
}

// Build shows a build in progress: "build 3f2c1a9d4e: build 45% (1m12s)" as
// the bar's description.
func (p *Bar) Build(bp build.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.bar.Describe(bp.String())
	_ = p.bar.RenderBlank()
}
