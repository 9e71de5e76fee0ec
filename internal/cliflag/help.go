package cliflag

import (
	"bytes"
	"io"
	"regexp"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
)

// HelpPrinterFunc is urfave/cli's cli.HelpPrinter: it renders template
// templ for data (a *cli.App or a *cli.Command) to w.
type HelpPrinterFunc = func(w io.Writer, templ string, data interface{})

var (
	// numberedCategory is a help category's heading as Categorize's
	// numbers sort it: "   2. Workload".
	numberedCategory = regexp.MustCompile(`(?m)^(   )[0-9]+\. `)
	// flagLine is the first name of a flag's help line: "   --good REV, ...".
	flagLine = regexp.MustCompile(`^   --?([A-Za-z0-9][A-Za-z0-9-]*)`)
)

// HelpPrinter wraps base so that help reads in the order a user needs it:
// a category's number (there only because urfave/cli sorts categories by
// name) is left out of its heading, and a category's flags are listed in
// the order the command declares them (urfave/cli sorts them by name, so
// --bad came before --good) rather than alphabetically. Other help is
// base's.
func HelpPrinter(base HelpPrinterFunc) HelpPrinterFunc {
	return func(w io.Writer, templ string, data interface{}) {
		var buf bytes.Buffer
		base(&buf, templ, data)
		var flags []cli.Flag
		switch d := data.(type) {
		case *cli.Command:
			flags = d.Flags
		case *cli.App:
			flags = d.Flags
		}
		out := numberedCategory.ReplaceAll(buf.Bytes(), []byte("$1"))
		w.Write([]byte(declaredOrder(string(out), flags)))
	}
}

// declaredOrder reorders every run of consecutive flag lines of help text
// by the position of the line's first flag name in flags (lines of flags
// not declared keep their place after the declared ones).
func declaredOrder(text string, flags []cli.Flag) string {
	rank := map[string]int{}
	for i, f := range flags {
		for _, n := range f.Names() {
			rank[n] = i
		}
	}
	position := func(line string) int {
		m := flagLine.FindStringSubmatch(line)
		if m == nil {
			return len(flags)
		}
		if r, ok := rank[m[1]]; ok {
			return r
		}
		return len(flags)
	}
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); {
		j := i
		for j < len(lines) && flagLine.MatchString(lines[j]) {
			j++
		}
		if j == i {
			i++
			continue
		}
		slices.SortStableFunc(lines[i:j], func(a, b string) int { return position(a) - position(b) })
		i = j
	}
	return strings.Join(lines, "\n")
}
