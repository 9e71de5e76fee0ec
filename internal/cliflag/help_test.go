package cliflag

import (
	"bytes"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// TestHelpPrinter: categories lose the numbers that sort them, and a
// category's flags are listed as the command declares them, not by name;
// the help of a command without categories is left as it was.
func TestHelpPrinter(t *testing.T) {
	saved := cli.HelpPrinter
	defer func() { cli.HelpPrinter = saved }()
	cli.HelpPrinter = HelpPrinter(saved)
	var out bytes.Buffer
	app := &cli.App{Name: "tool", Writer: &out, Commands: []*cli.Command{{
		Name: "start",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "good", Category: "1. Revisions", Usage: "a good one"},
			&cli.StringFlag{Name: "bad", Category: "1. Revisions", Usage: "a bad one"},
			&cli.StringFlag{Name: "repo", Category: "1. Revisions", Usage: "the tree"},
			&cli.IntFlag{Name: "threads", Category: "2. Workload", Usage: "threads"},
			&cli.IntFlag{Name: "tables", Category: "2. Workload", Usage: "tables"},
		},
		Action: func(*cli.Context) error { return nil },
	}}}
	if err := app.Run([]string{"tool", "start", "--help"}); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, s := range []string{"1. Revisions", "2. Workload"} {
		if strings.Contains(text, s) {
			t.Errorf("help shows the category's sorting number %q:\n%s", s, text)
		}
	}
	if !strings.Contains(text, "\n   Revisions\n") || !strings.Contains(text, "\n   Workload\n") {
		t.Errorf("help lost a category heading:\n%s", text)
	}
	order := []string{"--good", "--bad", "--repo", "--threads", "--tables"}
	last := -1
	for _, f := range order {
		i := strings.Index(text, "   "+f+" ")
		if i < 0 || i < last {
			t.Errorf("%s is not listed after %v's earlier flags (declared order):\n%s", f, order, text)
		}
		last = i
	}

	// Lines of flags the command does not declare stay after the declared
	// ones, in their order; text between flag lines is not moved.
	flags := []cli.Flag{&cli.StringFlag{Name: "a"}, &cli.StringFlag{Name: "b"}}
	got := declaredOrder("   --z  z\n   --b  b\n   --a  a\nUSAGE\n   --b  b\n", flags)
	if want := "   --a  a\n   --b  b\n   --z  z\nUSAGE\n   --b  b\n"; got != want {
		t.Errorf("declaredOrder = %q, want %q", got, want)
	}
}
