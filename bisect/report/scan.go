package report

import "github.com/perfbisect/perfbisect/bisect/scan"

// ScanDoc is what perfbisect scan prints with --format json and stores: the
// series, oldest first, and its shifts, each with the start command that
// bisects it.
type ScanDoc struct {
	From      string       `json:"from"`
	To        string       `json:"to"`
	Metric    string       `json:"metric"`
	Threshold float64      `json:"threshold"` // relative, e.g. 0.05
	Points    []ScanPoint  `json:"points"`
	Changes   []ScanChange `json:"changes"`
}

// ScanPoint is one commit of a scan's series.
type ScanPoint struct {
	Commit  string    `json:"commit"`
	Subject string    `json:"subject"`
	Values  []float64 `json:"values"` // the metric of each run, in the metric's unit
	Median  float64   `json:"median"`
	Skip    string    `json:"skip,omitempty"` // why the commit is not in the series
}

// ScanChange is one shift of a scan's series.
type ScanChange struct {
	scan.Change
	Start string `json:"start_command"` // the perfbisect start command that bisects it
}
