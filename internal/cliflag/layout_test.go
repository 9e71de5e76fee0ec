package cliflag

import (
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"oltp_read_only": "oltp_read_only",
		"/a/b.cnf":       "/a/b.cnf",
		"5%":             "5%",
		"":               "''",
		"a b":            "'a b'",
		"--x=1 --y=2":    "'--x=1 --y=2'",
		"it's":           `'it'\''s'`,
		"HEAD~1":         "HEAD~1",
		"~/x":            "'~/x'",
		"$HOME":          "'$HOME'",
	} {
		if got := ShellQuote(in); got != want {
			t.Errorf("ShellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestTypedAndSwallowedFlag(t *testing.T) {
	app := &cli.App{Commands: []*cli.Command{{Name: "start", Flags: []cli.Flag{
		&cli.StringFlag{Name: "good", Aliases: []string{"old"}},
		&cli.StringFlag{Name: "bad", Aliases: []string{"new"}},
		&cli.StringFlag{Name: "warmup", Aliases: []string{"warmup-time"}},
		&cli.StringFlag{Name: "cmake-args"},
		&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}},
	}}}}
	typed := Typed(app, []string{"perfbisect", "start", "--old", "a", "--bad=b", "--warmup-time=3", "-q", "--", "--new"})
	want := map[string]string{"good": "--old", "warmup": "--warmup-time", "quiet": "-q"}
	// A value that looks like an alias (another program's options) is not one.
	if typed := Typed(app, []string{"perfbisect", "start", "--cmake-args", "--old", "--good", "x"}); len(typed) != 0 {
		t.Errorf("Typed read --cmake-args' value as a flag: %v", typed)
	}
	if len(typed) != len(want) {
		t.Errorf("Typed = %v, want %v", typed, want)
	}
	for k, v := range want {
		if typed[k] != v {
			t.Errorf("Typed[%q] = %q, want %q", k, typed[k], v)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--good", "--bad", "b"}, "flag --good needs a value before --bad"},
		{[]string{"--old", "--new=b"}, "flag --old needs a value before --new"},
		{[]string{"--quiet", "--good", "a"}, ""},                  // a switch takes no value
		{[]string{"--cmake-args", "--warmup", "--good", "a"}, ""}, // another program's options
		{[]string{"--good", "a", "--bad", "b"}, ""},
		{[]string{"--good", "-1", "--bad", "b"}, ""}, // not a flag of the command
		{[]string{"--", "--good", "--bad"}, ""},
		{[]string{"--bad", "b", "--good", "--thraeds", "4"}, "flag --good needs a value before --thraeds"},
		{[]string{"--good", "--help"}, "flag --good needs a value before --help"},
	} {
		got := SwallowedFlag(app, append([]string{"perfbisect", "start"}, c.args...), []string{"cmake-args"})
		if c.want == "" && got != "" || !strings.HasPrefix(got, c.want) {
			t.Errorf("SwallowedFlag(%q) = %q, want %q", c.args, got, c.want)
		}
	}
	// A command that parses its own line (bench: sysbench's options).
	app.Commands = append(app.Commands, &cli.Command{Name: "bench", SkipFlagParsing: true})
	if got := SwallowedFlag(app, []string{"perfbisect", "bench", "--skip-trx", "--threads=2", "run"}, nil); got != "" {
		t.Errorf("bench's sysbench line: %q, want nothing", got)
	}
	if got := SwallowedFlag(app, []string{"perfbisect", "start", "--thraeds", "--good", "a"}, nil); got != "" {
		t.Errorf("an unknown flag: %q, want nothing (the parser names it)", got)
	}
	if Typed(app, []string{"perfbisect", "nope", "--old"}) != nil || SwallowedFlag(app, []string{"perfbisect"}, nil) != "" {
		t.Error("no command: want nothing")
	}
}

// Hide hides the named flags and no other, whatever their type.
func TestHide(t *testing.T) {
	flags := Hide([]cli.Flag{&cli.IntFlag{Name: "repeats"}, &cli.StringFlag{Name: "threshold"}, &cli.BoolFlag{Name: "quiet"},
		&cli.StringFlag{Name: "repo"}}, "repeats", "threshold", "quiet")
	for _, f := range flags {
		hidden := !f.(cli.VisibleFlag).IsVisible()
		if want := f.Names()[0] != "repo"; hidden != want {
			t.Errorf("--%s hidden %v, want %v", f.Names()[0], hidden, want)
		}
	}
}
