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
	if got := Text(err, "--"); got != "--max-repeats 10 is below --repeats 12" {
		t.Errorf("Text = %q", got)
	}
	wrapped := fmt.Errorf("start: %w", err)
	if got := Text(wrapped, "--"); got != "start: --max-repeats 10 is below --repeats 12" {
		t.Errorf("Text of a wrapped error = %q", got)
	}
	nested := Errorf("range: %w", Errorf("swap {good} and {bad}"))
	if got := Text(nested, "--"); got != "range: swap --good and --bad" {
		t.Errorf("Text of nested usage errors = %q", got)
	}
	if got := Text(errors.New("disk {full}"), "--"); got != "disk {full}" {
		t.Errorf("another error's braces are its own: %q", got)
	}
	if Text(nil, "--") != "" {
		t.Error("Text(nil)")
	}
}
