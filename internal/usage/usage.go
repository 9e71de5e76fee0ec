// Package usage marks the errors that are the user's input's fault (a
// setting out of range, a ref that does not resolve), so that a caller can
// tell them from failures of the tool or the machine (errors.Is(err,
// usage.Err)), and names settings the way each caller spells them: a
// message written with {name} placeholders ("{max-repeats} 10 is below
// {repeats} 12") reads "max-repeats 10 is below repeats 12" in Error() and
// "--max-repeats 10 is below --repeats 12" from Text(err, "--"), as the
// command line says it. The packages that do the work (bisect,
// bisect/session, bisect/scan) name their own settings; only the command
// line knows they are flags.
package usage

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Flag is a setting's name as the command line spells it: "--" + name. It is
// what the command line passes as the libraries' Setting hooks
// (session.Hooks.Setting, measure.Config.Setting).
func Flag(name string) string { return "--" + name }

// Err is what every usage error is (errors.Is).
var Err = errors.New("usage")

// Error is a usage error. Its message may hold {name} placeholders (see the
// package comment).
type Error struct {
	err error
}

// Errorf is fmt.Errorf (%w included) for an error of the user's input: it
// is Err (errors.Is), and its text is the message alone, with no prefix.
// Setting names in the format may be written {name}.
func Errorf(format string, args ...any) error {
	return &Error{fmt.Errorf(format, args...)}
}

var placeholder = regexp.MustCompile(`\{([a-z][a-z0-9-]*)\}`)

func (e *Error) Error() string        { return placeholder.ReplaceAllString(e.err.Error(), "$1") }
func (e *Error) Unwrap() error        { return e.err }
func (e *Error) Is(target error) bool { return target == Err }

// Text is err's message with every usage error's setting names written with
// prefix ("--" for flags); other errors' text is as it is.
func Text(err error, prefix string) string {
	if err == nil {
		return ""
	}
	msg := err.Error()
	// Each usage error in the chain, outermost first: its text holds the
	// inner ones' plain text, which the next turn renders.
	var ue *Error
	for e := err; errors.As(e, &ue); e = ue.err {
		plain, raw := ue.Error(), ue.err.Error()
		if i := strings.Index(msg, plain); i >= 0 {
			msg = msg[:i] + placeholder.ReplaceAllString(raw, prefix+"$1") + msg[i+len(plain):]
		}
	}
	return msg
}
