package app

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	shellwords "github.com/mattn/go-shellwords"

	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/bisect/session"
)

// logComment is git's comment before a verdict: "# bad: [sha] subject"
// (also new/old).
var logComment = regexp.MustCompile(`^# (good|bad|old|new): \[([0-9a-f]{40})\]`)

// BisectLog is a git bisect log (what git bisect log or perfbisect log
// print) read for perfbisect replay: the first bad and the first good
// revision are the session's endpoints, which it measures; every later
// good, bad or skip is a hand mark (HandMark, its reason naming the log's
// line).
type BisectLog struct {
	Good, Bad   string // as the log spells them (hashes, usually)
	FirstParent bool   // git bisect start --first-parent
	Marks       []HandMark
}

// ReadBisectLog reads a git bisect log from r (name is the file's, for
// messages and the marks' reasons). Comment lines and blank lines are
// skipped; the commands are git bisect start [--first-parent]
// [--no-checkout] [BAD [GOOD]], and good/bad/skip (old/new are good/bad)
// with revisions. Errors (usage) name the file and line: another command or
// option, a path limit ("--"), custom terms, two good revisions in the start
// line (perfbisect bisects from one good revision), no good or no bad
// revision.
func ReadBisectLog(r io.Reader, name string) (*BisectLog, error) {
	out := &BisectLog{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	n := 0
	bad := func(format string, args ...any) error {
		return bisect.Usagef("%s:%d: %s", name, n, fmt.Sprintf(format, args...))
	}
	// git writes the start line's revisions as typed (HEAD, a branch) and
	// their hashes in the comments before it ("# bad: [sha] subject"):
	// those are the endpoints, not what HEAD is when the log is replayed.
	var hashed map[bisect.Mark][]string
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if n == 1 {
			line = strings.TrimPrefix(line, "\ufeff") // a byte-order mark an editor added
		}
		if m := logComment.FindStringSubmatch(line); m != nil {
			if v, err := session.ParseMark(m[1]); err == nil && v != bisect.Skip {
				if hashed == nil {
					hashed = map[bisect.Mark][]string{}
				}
				hashed[v] = append(hashed[v], m[2])
			}
			continue
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		words, err := shellwords.Parse(line)
		if err != nil {
			return nil, bad("%v", err)
		}
		if len(words) < 3 || words[0] != "git" || words[1] != "bisect" {
			return nil, bad("%q is not a git bisect command: want git bisect start, good, bad or skip (a log written by git bisect log or perfbisect log)", line)
		}
		verb, args := words[2], words[3:]
		comments := hashed
		hashed = nil
		if verb == "start" {
			var revs []string
			for i, a := range args {
				switch {
				case a == "--first-parent":
					out.FirstParent = true
				case a == "--no-checkout":
				case a == "--" && i == len(args)-1:
					// no paths after it
				case a == "--":
					return nil, bad("a path-limited bisection (git bisect start ... -- PATHS) cannot be replayed: perfbisect bisects every commit of the range")
				case strings.HasPrefix(a, "--term"):
					return nil, bad("custom terms (%s) cannot be replayed: use good/bad or old/new", a)
				case strings.HasPrefix(a, "-"):
					return nil, bad("git bisect start option %s is not known to perfbisect replay", a)
				default:
					revs = append(revs, a)
				}
			}
			if len(revs) > 2 {
				return nil, bad("git bisect start names %d good revisions (%s): perfbisect bisects from one good revision; start it with one, or edit the log", len(revs)-1, strings.Join(revs[1:], " "))
			}
			if len(revs) > 0 && len(comments[bisect.Bad]) == 1 {
				revs[0] = comments[bisect.Bad][0]
			}
			if len(revs) == 2 && len(comments[bisect.Good]) == 1 {
				revs[1] = comments[bisect.Good][0]
			}
			for i, rev := range revs {
				m := bisect.Good
				if i == 0 {
					m = bisect.Bad
				}
				out.add(m, rev, name, n)
			}
			continue
		}
		m, err := session.ParseMark(verb)
		if err != nil {
			return nil, bad("git bisect %s cannot be replayed: want start, good, bad, skip (or old, new)", verb)
		}
		if len(args) == 0 {
			return nil, bad("git bisect %s names no revision (the log of git bisect log always does)", verb)
		}
		for _, rev := range args {
			out.add(m, rev, name, n)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, bisect.Usagef("%s: %v", name, err)
	}
	if out.Good == "" || out.Bad == "" {
		return nil, bisect.Usagef("%s: no good and bad revision to start from (a git bisect log names them in its git bisect start line, or in its first good and bad lines)", name)
	}
	return out, nil
}

// add takes one verdict of the log: the first bad and the first good are the
// endpoints, every other one a hand mark (one outside the endpoints' range
// is left out when the session begins).
func (l *BisectLog) add(m bisect.Mark, rev, name string, line int) {
	switch {
	case m == bisect.Bad && l.Bad == "":
		l.Bad = rev
	case m == bisect.Good && l.Good == "":
		l.Good = rev
	default:
		l.Marks = append(l.Marks, HandMark{Rev: rev, Mark: m, Reason: fmt.Sprintf("git bisect %s in %s line %d", m, name, line)})
	}
}

// OpenBisectLog reads the git bisect log file name (ReadBisectLog) and
// resolves its endpoints to hashes in the repository at repo when it opens
// (a symbolic one such as HEAD would move before a resume). Errors (usage):
// the file cannot be read, or ReadBisectLog's.
func OpenBisectLog(name, repo string) (*BisectLog, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, bisect.Usagef("%v (write one with git bisect log > %s)", err, name)
	}
	defer f.Close()
	l, err := ReadBisectLog(f, name)
	if err != nil {
		return nil, err
	}
	if r, err := bisect.OpenRepo(repo); err == nil {
		for _, end := range []struct {
			what string
			rev  *string
		}{{"good", &l.Good}, {"bad", &l.Bad}} {
			h, err := bisect.Resolve(r, *end.rev)
			if err != nil {
				// The log's, not a flag's: say where it comes from.
				return nil, bisect.Usagef("%s: its %s commit %s is not in the repository %s: replay a log in the repository it was written in (--repo)", name, end.what, *end.rev, repo)
			}
			*end.rev = h
		}
	}
	return l, nil
}

// StartArgs is the start command a replay of l stands for, stored for
// resume (which then needs no log): typed, the replay's arguments after the
// command's name, with the log file name left out, and --good, --bad and
// --first-parent (unless typed) from the log.
func (l *BisectLog) StartArgs(typed []string, name string, firstParentTyped bool) []string {
	args := []string{"start"}
	for _, a := range typed {
		if a != name {
			args = append(args, a)
		}
	}
	args = append(args, "--good", l.Good, "--bad", l.Bad)
	if l.FirstParent && !firstParentTyped {
		args = append(args, "--first-parent")
	}
	return args
}
