package serverctl

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"time"
)

// A SettingChange is a variable two option files give a server
// differently: its Key, and the winning setting of each file (nil when that
// file does not set it).
type SettingChange struct {
	Key      string
	From, To *Setting
}

// String is the change in one line: "innodb_flush_method=fsync ->
// O_DIRECT", "+skip-name-resolve" (only To sets it), "-query_cache_size=1M"
// (only From does).
func (c SettingChange) String() string {
	arg := func(s *Setting) string { return strings.TrimPrefix(s.Arg(), "--") }
	switch {
	case c.From == nil:
		return "+" + arg(c.To)
	case c.To == nil:
		return "-" + arg(c.From)
	}
	to := c.To.Value
	if c.To.Name != c.From.Name || !c.To.HasValue {
		to = arg(c.To)
	}
	return arg(c.From) + " -> " + to
}

// meaning is what a setting tells the server, for comparing two: its name
// without loose- and with _ for -, and its value.
func meaning(s Setting) string {
	name := strings.ReplaceAll(strings.TrimPrefix(strings.ReplaceAll(s.Name, "_", "-"), "loose-"), "-", "_")
	if !s.HasValue {
		return name
	}
	return name + "=" + s.Value
}

// winners is the winning setting of each Key of set, and the keys in the
// order their winners were read.
func winners(set *OptionFileSet) (map[string]Setting, []string) {
	last := map[string]Setting{}
	var order []string
	for _, s := range set.Settings {
		if _, ok := last[s.Key()]; !ok {
			order = append(order, s.Key())
		}
		last[s.Key()] = s
	}
	return last, order
}

// DiffSettings lists the variables whose winning settings differ between
// from and to (both read for the same server's groups), sorted by Key.
func DiffSettings(from, to *OptionFileSet) []SettingChange {
	a, _ := winners(from)
	b, _ := winners(to)
	var out []SettingChange
	for k, s := range a {
		t, ok := b[k]
		switch {
		case !ok:
			s := s
			out = append(out, SettingChange{Key: k, From: &s})
		case meaning(s) != meaning(t):
			s, t := s, t
			out = append(out, SettingChange{Key: k, From: &s, To: &t})
		}
	}
	for k, t := range b {
		if _, ok := a[k]; !ok {
			t := t
			out = append(out, SettingChange{Key: k, To: &t})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// ApplyChanges returns from's winning settings with changes made: a
// change's To in place of its From (where From was read), or dropped when
// To is nil; settings only To has come last, in the changes' order.
func ApplyChanges(from *OptionFileSet, changes []SettingChange) []Setting {
	last, order := winners(from)
	byKey := map[string]SettingChange{}
	for _, c := range changes {
		byKey[c.Key] = c
	}
	var out []Setting
	for _, k := range order {
		c, changed := byKey[k]
		switch {
		case !changed:
			out = append(out, last[k])
		case c.To != nil:
			out = append(out, *c.To)
		}
	}
	for _, c := range changes {
		if _, ok := last[c.Key]; !ok && c.To != nil {
			out = append(out, *c.To)
		}
	}
	return out
}

// WriteSettings writes settings as an option file at path (mode 0600: the
// user's values may be secrets), under [mysqld], a value with characters
// the reader treats specially in double quotes.
func WriteSettings(path string, settings []Setting) error {
	var b strings.Builder
	b.WriteString("# written by perfbisect: settings of two option files combined\n[mysqld]\n")
	for _, s := range settings {
		b.WriteString(s.Name)
		if s.HasValue {
			v := s.Value
			if v == "" || strings.ContainsAny(v, " \t#;'\"\\") {
				v = `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(v) + `"`
			}
			b.WriteString("=" + v)
		}
		b.WriteString("\n")
	}
	return os.WriteFile(path, []byte(b.String()), 0o600)
}

// ErrUnknownSetting is wrapped by Install.Accepts for a setting the server
// does not know.
var ErrUnknownSetting = errors.New("unknown to the server")

// Accepts reports whether the server takes setting s: it reads it with
// --no-defaults --verbose --help, which checks every option without
// starting (about a third of a second). Errors wrap ErrUnknownSetting with
// the server's line, or say why the server could not be asked.
func (in *Install) Accepts(ctx context.Context, s Setting) error {
	// --basedir as a start gives it: a build installed away from its
	// configured prefix finds its messages there (10.0 exits 1 without).
	cmd := exec.CommandContext(ctx, in.Server, "--no-defaults", "--basedir="+in.Prefix, s.Arg(), "--verbose", "--help")
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	out, err := cmd.CombinedOutput()
	for _, l := range strings.Split(string(out), "\n") {
		if unknownOptionRE.MatchString(l) {
			return fmt.Errorf("%w: %s (%s)", ErrUnknownSetting, strings.TrimPrefix(s.Arg(), "--"), strings.TrimSpace(l[unknownOptionRE.FindStringIndex(l)[0]:]))
		}
	}
	if err != nil && ctx.Err() == nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return fmt.Errorf("%w: %s (%s)", ErrUnknownSetting, strings.TrimPrefix(s.Arg(), "--"), lastLine(string(out)))
		}
		return fmt.Errorf("ask %s about %s: %w", in.Server, s.Arg(), err)
	}
	return ctx.Err()
}

// AcceptsFile reports whether the server takes every setting of option
// file f as it will read it (its own server groups, the files f includes):
// the server reads it with --defaults-file --verbose --help, which checks
// every option without starting. Errors wrap ErrUnknownSetting with the
// server's line and where the setting is set; a server that fails to
// answer for another reason (a plugin the file loads, a missing library)
// is not refused here: its start says why.
func (in *Install) AcceptsFile(ctx context.Context, f OptionFile) error {
	if f.IsZero() {
		return nil
	}
	ask, cancel := context.WithTimeout(ctx, time.Minute) // a server that hangs here is not refused: its start will say
	defer cancel()
	cmd := exec.CommandContext(ask, in.Server, "--defaults-file="+f.Path, "--basedir="+in.Prefix, "--verbose", "--help")
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	cmd.Dir = optionDir(f.Path, "") // where the start reads it: relative !include paths
	out, _ := cmd.CombinedOutput()
	for _, l := range strings.Split(string(out), "\n") {
		m := unknownOptionRE.FindStringSubmatchIndex(l)
		if m == nil || looseOption.MatchString(l[m[2]:m[3]]) {
			continue // a loose setting is skipped with a warning, as at the server's start
		}
		set, _ := f.Groups(ServerGroups(in))
		return fmt.Errorf("%w: %s; %s", ErrUnknownSetting, strings.TrimSpace(l[m[0]:]), unknownOptionHint([]string{l}, set))
	}
	return ctx.Err()
}

// looseOption is the prefix that makes a server skip an option it does not
// know (loose-, loose_, in any case).
var looseOption = regexp.MustCompile(`(?i)^loose[-_]`)

// lastLine is the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
