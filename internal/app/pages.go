package app

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/bisect/report"
	"github.com/perfbisect/perfbisect/bisect/store"
)

// WriteStoredHTML writes a finished bisection, comparison or scan to path
// as an HTML page and says so on w. Errors: usage for a session kind without
// a page; a failure for a document or page that cannot be written.
func WriteStoredHTML(w io.Writer, st *store.Store, sess *store.Session, path string) error {
	page := report.Page{Command: strings.TrimPrefix(sess.CommandLine(), "perfbisect ")}
	switch sess.Kind {
	case store.KindStart, store.KindRun:
		var doc report.Document
		if err := json.Unmarshal(sess.Result, &doc); err != nil {
			return With(Failure, fmt.Errorf("session %d: %w", sess.ID, err))
		}
		page.Title, page.Bisect = fmt.Sprintf("perfbisect: bisection %.10s..%.10s (session %d)", sess.Good, sess.Bad, sess.ID), &doc
	case store.KindCompare:
		var doc report.CompareDoc
		if err := json.Unmarshal(sess.Result, &doc); err != nil {
			return With(Failure, fmt.Errorf("session %d: %w", sess.ID, err))
		}
		page.Title, page.Compare = fmt.Sprintf("perfbisect compare %.10s %.10s (session %d)", sess.Good, sess.Bad, sess.ID), []report.CompareDoc{doc}
	case store.KindScan:
		var doc report.ScanDoc
		if err := json.Unmarshal(sess.Result, &doc); err != nil {
			return With(Failure, fmt.Errorf("session %d: %w", sess.ID, err))
		}
		page.Title, page.Scan = fmt.Sprintf("perfbisect scan %s..%s (session %d)", doc.From, doc.To, sess.ID), &doc
	default:
		return bisect.Usagef("{html}: session %d is a %s, which has no HTML rendering (use --format json)", sess.ID, sess.Kind)
	}
	if err := WriteHTML(path, st, page, sess.ID); err != nil {
		return With(Failure, err)
	}
	_, err := fmt.Fprintf(w, "wrote %s (session %d, %s)\n", path, sess.ID, sess.Kind)
	return err
}

// RenderStored prints a finished session's stored document in format; a
// bisection in text or markdown as a bug report (report.WriteBisectReport,
// with the command line, options and builds of the store).
func RenderStored(w io.Writer, st *store.Store, sess *store.Session, format string) error {
	if format == "json" {
		_, err := fmt.Fprintf(w, "%s\n", sess.Result)
		return err
	}
	switch sess.Kind {
	case store.KindCompare:
		var doc report.CompareDoc
		if err := json.Unmarshal(sess.Result, &doc); err != nil {
			return With(Failure, fmt.Errorf("session %d: %w", sess.ID, err))
		}
		return report.WriteCompare(w, format, doc)
	case store.KindStart, store.KindRun:
		if format == "junit" {
			return bisect.Usagef("{format} junit is for comparisons; session %d is a bisection", sess.ID)
		}
		var doc report.Document
		if err := json.Unmarshal(sess.Result, &doc); err != nil {
			return With(Failure, fmt.Errorf("session %d: %w", sess.ID, err))
		}
		page, err := CompletePage(st, report.Page{Command: sess.CommandLine(), Bisect: &doc}, sess.ID)
		if err != nil {
			return With(Failure, err)
		}
		return report.WriteBisectReport(w, format, page)
	case store.KindScan:
		if format != "text" {
			return bisect.Usagef("{format} %s: a scan renders as text or json", format)
		}
		var doc report.ScanDoc
		if err := json.Unmarshal(sess.Result, &doc); err != nil {
			return With(Failure, fmt.Errorf("session %d: %w", sess.ID, err))
		}
		return report.WriteScan(w, format, doc)
	default:
		return bisect.Usagef("session %d is a %s: only --format json renders it", sess.ID, sess.Kind)
	}
}

// WriteHTML completes p with what the store holds for the sessions ids
// (CompletePage) and writes it to path atomically.
func WriteHTML(path string, st *store.Store, p report.Page, ids ...int64) error {
	p, err := CompletePage(st, p, ids...)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := report.WriteHTML(&buf, p); err != nil {
		return fmt.Errorf("--html %s: %w", path, err)
	}
	return report.WriteFile(path, buf.Bytes())
}

// CompletePage adds to p what the store holds for the sessions ids: the
// options the server read in the last run of each commit, in the order the
// commits were first measured, and the build attempts. The report writers
// redact secret option values.
func CompletePage(st *store.Store, p report.Page, ids ...int64) (report.Page, error) {
	seen := map[string]int{}
	for _, id := range ids {
		commits, options, err := st.ServerOptions(id)
		if err != nil {
			return p, err
		}
		for i, commit := range commits {
			text := strings.TrimSpace(options[i]) // report.WriteHTML redacts secrets
			if j, ok := seen[commit]; ok {
				p.Options[j].Text = text
				continue
			}
			seen[commit] = len(p.Options)
			p.Options = append(p.Options, report.OptionsText{Commit: commit, Text: text})
		}
		builds, err := st.Builds(id)
		if err != nil {
			return p, err
		}
		for _, b := range builds {
			f := report.BuildFact{Commit: b.Commit, Seconds: b.Seconds, Flavor: b.Flavor, Version: b.Version, Prefix: b.Prefix, Error: b.Error, Cached: b.Cached}
			if len(ids) > 1 && slices.ContainsFunc(p.Builds, func(o report.BuildFact) bool {
				return o.Commit == f.Commit && o.Prefix == f.Prefix && o.Error == f.Error
			}) {
				continue // the same build, reused by the next thread count's comparison
			}
			p.Builds = append(p.Builds, f)
		}
	}
	return p, nil
}
