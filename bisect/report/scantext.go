package report

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// WriteScan renders a scan document as text (a table of the measured
// commits, then each change with the bisection it suggests) or json.
func WriteScan(w io.Writer, format string, doc ScanDoc) error {
	if format == "json" {
		return writeIndented(w, doc)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "commit\tsubject\tn\tmedian %s\n", doc.Metric)
	for _, p := range doc.Points {
		med := "skip: " + p.Skip
		if p.Skip == "" {
			med = fmt.Sprintf("%.4g", p.Median)
		}
		fmt.Fprintf(tw, "%.10s\t%.40s\t%d\t%s\n", p.Commit, p.Subject, len(p.Values), med)
	}
	tw.Flush()
	if len(doc.Changes) == 0 {
		fmt.Fprintf(w, "\nno shift of %s by %.1f%% or more found\n", doc.Metric, 100*doc.Threshold)
	}
	for _, ch := range doc.Changes {
		kind := "improvement"
		if ch.Regression {
			kind = "regression"
		}
		fmt.Fprintf(w, "\n%s %+.1f%% between %.10s and %.10s (median of the segments before and after: %.4g -> %.4g), p=%.2g\n  bisect it: %s\n",
			kind, 100*ch.RelChange, ch.Good, ch.Bad, ch.Before, ch.After, ch.P, ch.Start)
	}
	return nil
}
