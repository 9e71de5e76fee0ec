package app

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/perfbisect/perfbisect/bisect/report"
	"github.com/perfbisect/perfbisect/internal/usage"
)

// Output says where a command's answer goes: in Format (text, markdown,
// json, junit: what the command offers) to Path (--output; "" for the
// setup's Stdout), its HTML page to HTML (--html) and start's JSON document
// to JSON (--json), "" for none. Command is the command line as typed, shown
// on the HTML page; Title the page's title (the command's own when "").
type Output struct {
	Format, Path, HTML, JSON, Command, Title string
}

// CheckHTML fails when HTML names a file that cannot be written, or the
// file JSON or Path names. Errors: usage.
func (o Output) CheckHTML() error {
	if o.HTML == "" {
		return nil
	}
	if err := report.CheckWritable("html", o.HTML); err != nil {
		return With(Usage, err)
	}
	abs, _ := filepath.Abs(o.HTML)
	for _, other := range []struct{ name, path string }{{"json", o.JSON}, {"output", o.Path}} {
		if other.path == "" {
			continue
		}
		if oabs, _ := filepath.Abs(other.path); oabs == abs {
			return usageError("{html} %s and %s %s name the same file: give each report its own", o.HTML, usage.Setting(other.name), other.path)
		}
	}
	return nil
}

// EndProgress removes the live progress for good (before a final answer).
func (s *Setup) EndProgress() {
	if s.Live != nil {
		s.Live.Close()
		s.Live = nil
	}
}

// stdout is where answers go without --output.
func (s *Setup) stdout() io.Writer {
	if s.Stdout != nil {
		return s.Stdout
	}
	return os.Stdout
}

// stderr is where what goes wrong beside the answer is said.
func (s *Setup) stderr() io.Writer {
	if s.Stderr != nil {
		return s.Stderr
	}
	return os.Stderr
}

// answer ends the live progress and writes the answer b to out.Path
// (atomically) or the setup's Stdout. Errors: a failure naming the file.
func (s *Setup) answer(out Output, b []byte) error {
	s.EndProgress()
	if out.Path != "" {
		if err := report.WriteFile(out.Path, b); err != nil {
			return With(Failure, err)
		}
		return nil
	}
	_, err := s.stdout().Write(b)
	return err
}

// render writes an answer that write renders into a buffer (so that a
// rendering error leaves no half answer): see answer.
func (s *Setup) render(out Output, write func(w io.Writer) error) error {
	var buf bytes.Buffer
	if err := write(&buf); err != nil {
		return With(Failure, err)
	}
	return s.answer(out, buf.Bytes())
}

// page writes the HTML page p of the sessions ids to out.HTML, when set,
// with the command line as typed. A failure is said on the setup's Stderr,
// not returned: the command's answer stands.
func (s *Setup) page(out Output, p report.Page, ids ...int64) {
	if out.HTML == "" {
		return
	}
	p.Command = out.Command
	if out.Title != "" {
		p.Title = out.Title
	}
	if err := WriteHTML(out.HTML, s.Store, p, ids...); err != nil {
		fmt.Fprintf(s.stderr(), "perfbisect: %v\n", err)
	}
}

// WriteComparisons writes compare's documents (Compare): in out.Format to
// out.Path or Stdout, the HTML page of the sessions ids to out.HTML, and,
// under GitHub Actions, the workflow's annotations (on Stderr when Stdout
// holds a JSON or JUnit document).
func (s *Setup) WriteComparisons(out Output, docs []report.CompareDoc, ids []int64) error {
	if err := s.render(out, func(w io.Writer) error { return report.WriteCompareSet(w, out.Format, docs) }); err != nil {
		return err
	}
	s.page(out, report.Page{Compare: docs}, ids...)
	if os.Getenv("GITHUB_ACTIONS") == "true" {
		w := s.stdout()
		if out.Path == "" && (out.Format == "json" || out.Format == "junit") {
			w = s.stderr()
		}
		report.WriteGitHubAnnotations(w, docs)
	}
	return nil
}

// WriteSettings writes which-setting's answer (WhichSetting) in out.Format,
// when it has one.
func (s *Setup) WriteSettings(out Output, doc report.SettingsDoc) error {
	if doc.Result == "" {
		return nil
	}
	return s.render(out, func(w io.Writer) error { return report.WriteSettings(w, out.Format, doc) })
}

// WriteExplanation writes explain's answer (Explain) in out.Format and its
// HTML page.
func (s *Setup) WriteExplanation(out Output, doc *report.ExplainDoc) error {
	var buf bytes.Buffer
	if err := report.WriteExplain(&buf, out.Format, *doc); err != nil {
		return With(Failure, fmt.Errorf("explain: %w", err))
	}
	s.EndProgress()
	s.page(out, report.Page{Explain: doc})
	return s.answer(out, buf.Bytes())
}

// WriteScanResult writes scan's answer (Scan) when the scan ended with one
// (done, a regression, or a usage error after points were measured), and
// its HTML page when it measured points; err is Scan's outcome, returned.
func (s *Setup) WriteScanResult(out Output, doc *report.ScanDoc, id int64, err error) error {
	if doc == nil {
		return err
	}
	if o := OutcomeOf(err); o == Done || o == Regression || o == Usage {
		s.EndProgress()
		_ = report.WriteScan(s.stdout(), out.Format, *doc)
	}
	if len(doc.Points) > 0 {
		s.page(out, report.Page{Scan: doc}, id)
	}
	return err
}

// writeBisection writes a bisection's document to out.JSON and its page to
// out.HTML (titled title unless out.Title is set), when set; a failure is
// said on Stderr: the session's answer stands.
func (s *Setup) writeBisection(out Output, doc report.Document, id int64, title string) {
	if out.JSON != "" {
		if err := report.WriteJSON(out.JSON, doc); err != nil {
			fmt.Fprintf(s.stderr(), "perfbisect: %v\n", err)
		}
	}
	s.page(out, report.Page{Title: title, Bisect: &doc}, id)
}

// CompareFormats are the formats compare and report write
// (report.CompareFormats).
var CompareFormats = report.CompareFormats
