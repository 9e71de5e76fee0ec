// Package usage marks the errors that are the user's input's fault (a
// setting out of range, a ref that does not resolve), so that a caller can
// tell them from failures of the tool or the machine (errors.Is(err,
// usage.Err)), and names settings the way each caller spells them: a
// message written with {name} placeholders ("{max-repeats} 10 is below
// {repeats} 12") reads "max-repeats 10 is below repeats 12" in Error() and
// "--max-repeats 10 is below --repeats 12" from TextNamed with "--" + name, as the
// command line says it. Only the format is read for placeholders, never the
// values formatted into it (what the user typed stays as typed); a name
// known only at run time is an argument of type Setting. The packages that
// do the work (bisect, bisect/session, bisect/scan) name their own settings;
// only the command line knows they are flags.
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

// Error is a usage error. Its format may hold {name} placeholders (see the
// package comment); its arguments are never read for them: a value the user
// typed ("{x}" in a path, say) stays as typed.
type Error struct {
	format string
	args   []any
	err    error // the plain text (names bare), and what %w wrapped
}

// Errorf is fmt.Errorf (%w included) for an error of the user's input: it
// is Err (errors.Is), and its text is the message alone, with no prefix.
// Setting names in the format may be written {name}; a name computed at run
// time is an argument of type Setting (or Settings).
func Errorf(format string, args ...any) error {
	return &Error{format: format, args: args, err: fmt.Errorf(placeholder.ReplaceAllString(format, "$1"), args...)}
}

// Setting is a setting's name as an argument of Errorf: written bare by
// Error, as TextNamed names it, as a {name} of the format is.
type Setting string

func (s Setting) String() string { return string(s) }

// Settings are names as one argument of Errorf, written "a, b".
type Settings []Setting

func (s Settings) String() string { return s.text(func(n string) string { return n }) }

func (s Settings) text(name func(string) string) string {
	var out []string
	for _, n := range s {
		out = append(out, name(string(n)))
	}
	return strings.Join(out, ", ")
}

var placeholder = regexp.MustCompile(`\{([a-z][a-z0-9-]*)\}`)

func (e *Error) Error() string        { return e.err.Error() }
func (e *Error) Unwrap() error        { return e.err }
func (e *Error) Is(target error) bool { return target == Err }

// render is e's text with setting names written by name: the format's
// placeholders, the Setting arguments, and usage errors among the arguments.
func (e *Error) render(name func(string) string) string {
	args := make([]any, len(e.args))
	for i, a := range e.args {
		switch v := a.(type) {
		case Setting:
			args[i] = name(string(v))
		case Settings:
			args[i] = v.text(name)
		case error:
			args[i] = rendered{TextNamed(v, name), v}
		default:
			args[i] = a
		}
	}
	format := placeholder.ReplaceAllStringFunc(e.format, func(m string) string {
		return strings.ReplaceAll(name(m[1:len(m)-1]), "%", "%%")
	})
	return fmt.Errorf(format, args...).Error()
}

// rendered is an error argument with its text rendered (still an error, for
// a %w of the format).
type rendered struct {
	text string
	err  error
}

func (r rendered) Error() string { return r.text }
func (r rendered) Unwrap() error { return r.err }

// TextNamed is err's message with every usage error's setting names
// written as name gives them ("--" + the name for flags, or the flag as the
// user typed it: an alias for the name it stands for); other errors' text
// is as it is.
func TextNamed(err error, name func(setting string) string) string {
	if err == nil {
		return ""
	}
	msg := err.Error()
	// The outermost usage error renders the ones inside it (its arguments).
	var ue *Error
	if errors.As(err, &ue) {
		if plain := ue.Error(); plain != "" {
			if i := strings.Index(msg, plain); i >= 0 {
				msg = msg[:i] + ue.render(name) + msg[i+len(plain):]
			}
		}
	}
	return msg
}
