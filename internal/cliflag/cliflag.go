// Package cliflag is perfbisect's command line around urfave/cli: flag
// values (times, percentages, the confidence, thread lists), flags before
// positional arguments (FlagsFirst), help categories and placeholders
// (HelpPrinter), errors worded for a user (the flag as typed, the nearest
// flag when one is near) and command lines quoted for a shell (ShellQuote). Its errors are the
// user's input's (bisect.ErrUsage).
package cliflag

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/perfbisect/perfbisect/internal/spell"
	"github.com/perfbisect/perfbisect/internal/usage"
)

// Seconds reads a sysbench-style time of flag: plain seconds ("3", "1.5",
// at most a week) or a Go duration ("3s", "500ms"), not negative.
func Seconds(flag, s string) (time.Duration, error) {
	const week = 7 * 24 * time.Hour
	name := usage.Setting(flag)
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		if !(f >= 0 && f <= week.Seconds()) { // also NaN
			return 0, usage.Errorf("%s %s: want seconds between 0 and one week", name, s)
		}
		return time.Duration(f * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(s)
	switch {
	case err != nil || d < 0:
		return 0, usage.Errorf("%s %q: want seconds (3) or a duration (3s, 500ms)", name, s)
	case d > week:
		return 0, usage.Errorf("%s %s: want at most one week", name, s)
	}
	return d, nil
}

// Percent reads "5" or "5%" of flag as 0.05 (strictly between 0 and 100%).
func Percent(flag, s string) (float64, error) {
	f, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(s), "%"), 64)
	if err != nil || !(f > 0 && f < 100) { // NaN too
		return 0, usage.Errorf("%s %q: want a percentage between 0 and 100, such as 5 or 5%%", usage.Setting(flag), s)
	}
	return f / 100, nil
}

// Confidence reads --confidence as a probability (0.95) or a percentage
// (95%), above 0.5 and below 1 (what the session takes); "99.9%" is 0.999 exactly (the value is part of
// a session's identity). A number above 1 without % is refused: 95 may be a
// typo either way.
func Confidence(s string) (float64, error) {
	num, pct := strings.CutSuffix(strings.TrimSpace(s), "%")
	if pct {
		num += "e-2" // 99.9% is 0.999 as typed, not 99.9/100
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || !(f > 0.5 && f < 1) {
		return 0, usage.Errorf("{confidence} %q: want a probability above 0.5 and below 1, or a percentage, such as 0.95 or 95%%", s)
	}
	return f, nil
}

// ThreadList reads --thread-list: comma-separated client thread counts, each
// 1 to 1024, no repeats.
func ThreadList(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 1024 || slices.Contains(out, n) {
			return nil, usage.Errorf("{thread-list} %q: want distinct thread counts from 1 to 1024, comma-separated (1,2,4,8)", s)
		}
		out = append(out, n)
	}
	return out, nil
}

var (
	undefinedFlag = regexp.MustCompile(`^flag provided but not defined: -+(\S+)$`)
	flagNeedsArg  = regexp.MustCompile(`^flag needs an argument: -+(\S+)$`)
	badFlagValue  = regexp.MustCompile(`^invalid (boolean )?value (".*") for (?:flag )?-+(\S+): (.*)$`)
	twoForms      = regexp.MustCompile(`^Cannot use two forms of the same flag: (\S+) (\S+)$`)
)

// dashed is a flag's name as typed: -q, --threads.
func dashed(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// Error words a command-line error of Go's flag package (one-dash messages)
// for command (its name, "" for perfbisect's own options, and its flags):
// the flag as typed, the nearest flag of the command for an unknown one
// (when it is near), and where the help is: "unknown flag --thraeds; did you
// mean --threads? (see perfbisect start --help)".
func Error(command string, flags []cli.Flag, err error) string {
	msg := err.Error()
	name := strings.TrimSpace("perfbisect " + command)
	switch m := undefinedFlag.FindStringSubmatch(msg); {
	case m != nil && command == "":
		msg = "unknown flag " + dashed(m[1]) + " before the command: options go after the command's name (perfbisect start " + dashed(m[1]) + " ...)"
	case m != nil:
		msg = "unknown flag " + dashed(m[1])
		if cli.SuggestFlag != nil && len(flags) > 0 {
			if s := cli.SuggestFlag(flags, m[1], true); s != "" && spell.Near(m[1], strings.TrimLeft(s, "-")) {
				msg += "; did you mean " + s + "?"
			}
		}
	default:
		if m := flagNeedsArg.FindStringSubmatch(msg); m != nil {
			msg = "flag " + dashed(m[1]) + " needs a value"
		} else if m := badFlagValue.FindStringSubmatch(msg); m != nil {
			why := m[4]
			if m[1] != "" {
				why = "want true or false (or the flag alone)"
			}
			msg = "invalid value " + m[2] + " for " + dashed(m[3]) + ": " + why
		} else if m := twoForms.FindStringSubmatch(msg); m != nil {
			msg = dashed(m[1]) + " and " + dashed(m[2]) + " are the same flag: give it once"
		}
	}
	return msg + " (see " + name + " --help)"
}

// ShellQuote quotes s for a POSIX shell when it needs it (single quotes;
// a quote inside written '\”). A '~' needs none after the first
// character (HEAD~1).
func ShellQuote(s string) string {
	if s != "" && s[0] != '~' && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '-' || r == '_' || r == '.' || r == '/' || r == '=' || r == ':' || r == ',' || r == '%' || r == '+' || r == '@' || r == '~' ||
			r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Given lists those of names whose flags c was given, in names' order.
func Given(c *cli.Context, names ...string) []string {
	var out []string
	for _, n := range names {
		if c.IsSet(n) {
			out = append(out, n)
		}
	}
	return out
}

// Hide hides from help the flags of names among flags (a command that
// takes a shared flag set but has no use for some of them); it returns
// flags.
func Hide(flags []cli.Flag, names ...string) []cli.Flag {
	for _, f := range flags {
		if !slices.Contains(names, f.Names()[0]) {
			continue
		}
		switch f := f.(type) {
		case *cli.IntFlag:
			f.Hidden = true
		case *cli.StringFlag:
			f.Hidden = true
		case *cli.BoolFlag:
			f.Hidden = true
		case *cli.Float64Flag:
			f.Hidden = true
		case *cli.Int64Flag:
			f.Hidden = true
		case *cli.StringSliceFlag:
			f.Hidden = true
		}
	}
	return flags
}
