package usage

import (
	"errors"
	"fmt"
	"testing"
)

func TestSettingNames(t *testing.T) {
	err := Errorf("{max-repeats} %d is below {repeats} %d", 10, 12)
	if !errors.Is(err, Err) {
		t.Fatal("not a usage error")
	}
	if got := err.Error(); got != "max-repeats 10 is below repeats 12" {
		t.Errorf("Error() = %q", got)
	}
	if got := text(err, "--"); got != "--max-repeats 10 is below --repeats 12" {
		t.Errorf("Text = %q", got)
	}
	wrapped := fmt.Errorf("start: %w", err)
	if got := text(wrapped, "--"); got != "start: --max-repeats 10 is below --repeats 12" {
		t.Errorf("Text of a wrapped error = %q", got)
	}
	nested := Errorf("range: %w", Errorf("swap {good} and {bad}"))
	if got := text(nested, "--"); got != "range: swap --good and --bad" {
		t.Errorf("Text of nested usage errors = %q", got)
	}
	if got := text(errors.New("disk {full}"), "--"); got != "disk {full}" {
		t.Errorf("another error's braces are its own: %q", got)
	}
	if text(nil, "--") != "" {
		t.Error("TextNamed(nil)")
	}
}

// A value the user typed is never read for placeholders: "{threads}" in it
// stays as typed; names computed at run time are Setting and Settings.
func TestValuesStayAsTyped(t *testing.T) {
	err := Errorf("{find} %q: want regression or improvement", "{threads}")
	if got := text(err, "--"); got != `--find "{threads}": want regression or improvement` {
		t.Errorf("Text = %q", got)
	}
	if got := err.Error(); got != `find "{threads}": want regression or improvement` {
		t.Errorf("Error() = %q", got)
	}
	path := Errorf("{my-cnf}: %w", fmt.Errorf("option file /tmp/{repo}/my.cnf:1: bad"))
	if got := text(path, "--"); got != "--my-cnf: option file /tmp/{repo}/my.cnf:1: bad" {
		t.Errorf("a wrapped error's text = %q", got)
	}
	dyn := Errorf("%s needs a value; %v would be ignored", Setting("output"), Settings{"cv", "merges"})
	if got, plain := text(dyn, "--"), dyn.Error(); got != "--output needs a value; --cv, --merges would be ignored" || plain != "output needs a value; cv, merges would be ignored" {
		t.Errorf("Text = %q, Error() = %q", got, plain)
	}
	inner := fmt.Errorf("start: %w", Errorf("{max-repeats} %d", 4))
	outer := Errorf("{search} %s: %w", "{x}", inner)
	if got := text(outer, "--"); got != "--search {x}: start: --max-repeats 4" {
		t.Errorf("a usage error inside a plain one, inside a usage error: %q", got)
	}
	if !errors.Is(errors.Unwrap(errors.Unwrap(outer)), inner) && !errors.Is(outer, inner) {
		t.Error("%w no longer wraps")
	}
}

func TestTextNamed(t *testing.T) {
	err := fmt.Errorf("start: %w", Errorf("{warmup} %q and %s; %s", "x", Setting("good"), Settings{"time", "warmup"}))
	named := func(n string) string {
		if n == "warmup" {
			return "--warmup-time"
		}
		return "--" + n
	}
	want := `start: --warmup-time "x" and --good; --time, --warmup-time`
	if got := TextNamed(err, named); got != want {
		t.Errorf("TextNamed = %q, want %q", got, want)
	}
}

// text is TextNamed with each setting written prefix + its name.
func text(err error, prefix string) string {
	return TextNamed(err, func(n string) string { return prefix + n })
}
