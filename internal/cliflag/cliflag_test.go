package cliflag

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/perfbisect/perfbisect/bisect"
)

func TestSeconds(t *testing.T) {
	good := map[string]time.Duration{"3": 3 * time.Second, "1.5": 1500 * time.Millisecond, "3s": 3 * time.Second,
		"500ms": 500 * time.Millisecond, "0": 0, "2m": 2 * time.Minute}
	for in, want := range good {
		if got, err := Seconds("time", in); err != nil || got != want {
			t.Errorf("%q: %v %v, want %v", in, got, err, want)
		}
	}
	if got, err := Seconds("time", "168h"); err != nil || got != 7*24*time.Hour {
		t.Errorf("168h (one week): %v %v", got, err)
	}
	for _, in := range []string{"", "3x", "-1", "-2s", "three", "10000h", "604801"} {
		if _, err := Seconds("time", in); !errors.Is(err, bisect.ErrUsage) {
			t.Errorf("%q: %v, want a usage error", in, err)
		}
	}
}

func TestPercent(t *testing.T) {
	for in, want := range map[string]float64{"5": 0.05, "5%": 0.05, "2.5": 0.025, " 10% ": 0.10} {
		if got, err := Percent("threshold", in); err != nil || got != want {
			t.Errorf("%q: %v %v, want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"0", "100", "-5", "abc", "150%"} {
		if _, err := Percent("threshold", in); !errors.Is(err, bisect.ErrUsage) {
			t.Errorf("%q: %v, want a usage error", in, err)
		}
	}
}

func TestConfidence(t *testing.T) {
	for in, want := range map[string]float64{"0.95": 0.95, "95%": 0.95, " 99.9% ": 0.999, "99.99%": 0.9999, "0.51": 0.51} {
		if got, err := Confidence(in); err != nil || got != want { // exactly: the value is part of the session's identity
			t.Errorf("%q: %v %v, want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"95", "1", "0", "100%", "-0.9", "abc", "0%", "0.95%", "0.4", "0.5", "50%"} {
		if _, err := Confidence(in); !errors.Is(err, bisect.ErrUsage) {
			t.Errorf("%q: %v, want a usage error", in, err)
		}
	}
}

func TestThreadList(t *testing.T) {
	if got, err := ThreadList("1, 2,4,8"); err != nil || len(got) != 4 || got[3] != 8 {
		t.Errorf("1,2,4,8: %v %v", got, err)
	}
	for _, in := range []string{"", "1,1", "0", "2000", "x"} {
		if _, err := ThreadList(in); err == nil {
			t.Errorf("%q: want an error", in)
		}
	}
}

func TestError(t *testing.T) {
	flags := []cli.Flag{&cli.IntFlag{Name: "threads"}, &cli.StringFlag{Name: "repo"}, &cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}}}
	for _, c := range []struct{ command, err, want string }{
		{"start", "flag provided but not defined: -thraeds", "unknown flag --thraeds; did you mean --threads? (see perfbisect start --help)"},
		{"start", "flag provided but not defined: -nosuch", "unknown flag --nosuch (see perfbisect start --help)"},
		{"start", "flag provided but not defined: -z", "unknown flag -z (see perfbisect start --help)"},
		{"", "flag provided but not defined: -repo", "unknown flag --repo before the command: options go after the command's name (perfbisect start --repo ...) (see perfbisect --help)"},
		{"start", "flag needs an argument: -repo", "flag --repo needs a value (see perfbisect start --help)"},
		{"start", `invalid value "abc" for flag -threads: parse error`, `invalid value "abc" for --threads: parse error (see perfbisect start --help)`},
		{"start", `invalid boolean value "maybe" for -quiet: parse error`, `invalid value "maybe" for --quiet: want true or false (or the flag alone) (see perfbisect start --help)`},
		{"start", `Cannot use two forms of the same flag: warmup-time warmup`, `--warmup-time and --warmup are the same flag: give it once (see perfbisect start --help)`},
		{"compare", "something else", "something else (see perfbisect compare --help)"},
	} {
		if got := Error(c.command, flags, errors.New(c.err)); got != c.want {
			t.Errorf("Error(%q, %q) = %q, want %q", c.command, c.err, got, c.want)
		}
	}
}

// TestGiven: only the flags the command line gave, in the order asked.
func TestGiven(t *testing.T) {
	var got []string
	app := &cli.App{Flags: []cli.Flag{&cli.IntFlag{Name: "tables", Value: 1}, &cli.IntFlag{Name: "table-size", Value: 10}, &cli.StringFlag{Name: "driver"}},
		Action: func(c *cli.Context) error {
			got = Given(c, "driver", "tables", "table-size")
			return nil
		}}
	if err := app.Run([]string{"x", "--table-size", "5", "--driver", "sysbench"}); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, ",") != "driver,table-size" {
		t.Errorf("Given = %v, want driver, table-size", got)
	}
}
