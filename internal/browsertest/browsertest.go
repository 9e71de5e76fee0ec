// Package browsertest opens an HTML report of perfbisect in headless Chromium
// (driven over the DevTools protocol with chromedp) and reads back what its
// charts drew, for tests: every canvas, its Chart.js datasets with the number
// of elements each drew and how many of them lie inside the chart area, the
// canvas's painted pixels, and every console error or uncaught exception.
package browsertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/perfbisect/perfbisect/internal/testenv"
)

// Dataset is one Chart.js dataset as drawn.
type Dataset struct {
	Label    string `json:"label"`
	Elements int    `json:"elements"` // point or line elements Chart.js laid out
	Inside   int    `json:"inside"`   // of those, with finite coordinates inside the chart area
}

// Canvas is one <canvas> of the page.
type Canvas struct {
	ID       string    `json:"id"`
	Kind     string    `json:"kind"`   // data-kind: path, runs, timeline
	Commit   string    `json:"commit"` // data-commit
	Runs     int       `json:"runs"`   // data-runs, -1 when absent
	Chart    bool      `json:"chart"`  // a Chart.js chart is attached
	Painted  int       `json:"painted"`
	Datasets []Dataset `json:"datasets"`
}

// Dataset returns the canvas's dataset with label, or false.
func (c Canvas) Dataset(label string) (Dataset, bool) {
	for _, d := range c.Datasets {
		if d.Label == label {
			return d, true
		}
	}
	return Dataset{}, false
}

// Page is what the browser made of a report.
type Page struct {
	Title    string
	Canvases []Canvas
	Flames   []Flame  // the differential flame graphs (div.flame)
	Errors   []string // console errors, uncaught exceptions, failed loads
}

// Chromium returns the path of a Chromium (or Chrome) binary, or fails the
// test saying how to install one.
func Chromium(t testing.TB) string {
	t.Helper()
	testenv.Require(t, testenv.Browser)
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatalf("no chromium in PATH: install Debian's chromium package (scripts/setup.sh does)")
	return ""
}

const inspect = `Array.from(document.querySelectorAll("canvas")).map(function (c) {
	var ch = Chart.getChart(c), out = {id: c.id, kind: c.dataset.kind || "", commit: c.dataset.commit || "",
		runs: c.dataset.runs === undefined ? -1 : +c.dataset.runs, chart: !!ch, painted: 0, datasets: []};
	var px = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
	for (var i = 3; i < px.length; i += 4) { if (px[i] !== 0) out.painted++; }
	if (ch) {
		var a = ch.chartArea;
		ch.data.datasets.forEach(function (d, i) {
			var els = ch.getDatasetMeta(i).data;
			out.datasets.push({label: d.label, elements: els.length, inside: els.filter(function (e) {
				return isFinite(e.x) && isFinite(e.y) && e.x >= a.left - 1 && e.x <= a.right + 1 && e.y >= a.top - 1 && e.y <= a.bottom + 1;
			}).length});
		});
	}
	return out;
})`

// Flame is a flame graph as drawn: its frames (elements with
// data-frame) and the labels of those wide enough to carry one.
type Flame struct {
	ID     string   `json:"id"`
	Frames int      `json:"frames"`
	Labels []string `json:"labels"`
}

const inspectFlames = `Array.from(document.querySelectorAll("div.flame")).map(function (b) {
	var fs = Array.from(b.querySelectorAll("[data-frame]"));
	return {id: b.id, frames: fs.length, labels: fs.map(function (f) { return f.textContent; }).filter(function (s) { return s !== ""; })};
})`

// Load opens the HTML file at path in headless Chromium, waits until the page
// says its charts are drawn (body[data-charts], set by the report's script)
// and returns what it drew. A screenshot of the whole page is written to
// t.ArtifactDir() as screenshot (PNG) (kept with go test -artifacts). It fails the
// test when the browser cannot be started or the page never finishes (30 s).
func Load(t testing.TB, path, screenshot string) Page {
	t.Helper()
	testenv.Require(t, testenv.Browser)
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(Chromium(t)),
		chromedp.NoSandbox, // root in CI
		chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()),
		// Chromium leaves an empty org.chromium.Chromium.* directory in TMPDIR
		// per start: keep it in the test's own.
		chromedp.Env("TMPDIR="+t.TempDir()),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.WindowSize(1280, 900),
	)
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelA()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancelT := context.WithTimeout(ctx, 60*time.Second)
	defer cancelT()

	messages := chromedp.Console(ctx)
	var mu sync.Mutex
	var page Page
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				mu.Lock()
				page.Errors = append(page.Errors, fmt.Sprintf("%s (%s:%d)", m, m.URL, m.Line))
				mu.Unlock()
			}
		}
	}()
	err = chromedp.Do(ctx,
		chromedp.Navigate("file://"+abs),
		chromedp.WaitReady(chromedp.CSS("body[data-charts]")),
	)
	var title string
	var canvases []Canvas
	var shot []byte
	if err == nil {
		title, err = chromedp.Run(ctx, chromedp.Title())
	}
	if err == nil {
		canvases, err = chromedp.Run(ctx, chromedp.Evaluate[[]Canvas](inspect))
	}
	var flames []Flame
	if err == nil {
		flames, err = chromedp.Run(ctx, chromedp.Evaluate[[]Flame](inspectFlames))
	}
	if err == nil {
		shot, err = chromedp.Run(ctx, chromedp.FullScreenshot(100))
	}
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	if err != nil {
		t.Fatalf("chromium on %s: %v (console: %q)", path, err, page.Errors)
	}
	if screenshot != "" {
		out := filepath.Join(t.ArtifactDir(), screenshot)
		if err := os.WriteFile(out, shot, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s", out)
	}
	page.Title, page.Canvases, page.Flames = title, canvases, flames
	return page
}
