package serverctl

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	version "github.com/hashicorp/go-version"
)

// Setting is one option line of an option file as the server's reader returns
// it: the name as written (dashes, underscores, loose-/skip- prefixes kept), the
// value unquoted with escapes resolved, and where it came from.
type Setting struct {
	Name     string // "innodb-buffer-pool-size", "loose-innodb_use_mtflush", "skip-name-resolve"
	Value    string // "" when the line has no '=' (see HasValue)
	HasValue bool   // "key=" has an empty value; "key" has none
	Group    string // the group as written in its header, "mysqld-10.11"
	File     string // absolute path of the file the line is in
	Line     int    // 1-based line number in File
}

// Arg is the setting as a command-line argument, the way my_print_defaults and
// `mysqld --print-defaults` print it: "--name=value" or "--name".
func (s Setting) Arg() string {
	if s.HasValue {
		return "--" + s.Name + "=" + s.Value
	}
	return "--" + s.Name
}

// Where is "file:line" of the setting, for messages.
func (s Setting) Where() string { return fmt.Sprintf("%s:%d", s.File, s.Line) }

// Key is the variable the setting sets, as my_getopt matches it: without the
// loose-, skip-, disable- and enable- prefixes, '-' and '_' equivalent (written
// '_'). Names are case-sensitive, as in the server. "skip-log-bin" and
// "log_bin=ON" have the same Key, "log_bin".
func (s Setting) Key() string {
	n := strings.ReplaceAll(s.Name, "-", "_")
	n = strings.TrimPrefix(n, "loose_")
	for _, p := range []string{"skip_", "disable_", "enable_"} {
		if k, ok := strings.CutPrefix(n, p); ok {
			return k
		}
	}
	return n
}

// OptionFileSet is what the server reads from an option file for a set of
// groups: the settings in reading order (so the last setting of a Key wins), the
// files read (the file itself and every file !include and !includedir pulled
// in, in order) and warnings about what the server would silently skip (a
// missing !include, an unknown '!' directive, an include loop).
type OptionFileSet struct {
	Settings []Setting
	Files    []string
	Warnings []string
}

// Last returns the setting of key (see Setting.Key) that wins, the last one
// read, and whether there is one.
func (f *OptionFileSet) Last(key string) (Setting, bool) {
	for i := len(f.Settings) - 1; i >= 0; i-- {
		if f.Settings[i].Key() == key {
			return f.Settings[i], true
		}
	}
	return Setting{}, false
}

// maxIncludeDepth is the reader's limit on nested !include/!includedir (mysys
// my_default.c: a deeper directive is skipped with a warning).
const maxIncludeDepth = 10

// ReadUserOptionFile reads the user's option file the way the servers
// perfbisect starts read it: inlined into the effective option file (so its
// last line always ends in a newline) with relative includes resolved against
// its own directory. Groups and errors as for readOptionFile.
func ReadUserOptionFile(path string, groups []string) (*OptionFileSet, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("%w %s: %v", ErrOptionFile, path, err)
	}
	return readOptionFile(abs, groups, filepath.Dir(abs), true)
}

// readOptionFile reads the option file path with the rules of the server's own
// reader (mysys my_default.c, MariaDB 10.11; the golden tests compare it with
// my_print_defaults and `mariadbd --print-defaults` on the same files) and
// returns the settings of the given groups (case-insensitive; see ServerGroups):
//
//   - a line is trimmed; empty lines and lines starting with '#' or ';' are
//     comments; elsewhere '#' outside quotes starts a comment (in names too);
//   - "[group]" starts a group (leading blanks inside the brackets are part of
//     the name, trailing ones are not, text after ']' is ignored); an option
//     before any group, or a '[' without ']', is an error;
//   - "name", "name = value": blanks around name and value are trimmed, a value
//     wrapped in matching quotes loses them, and \n \t \r \b \s \" \' \\ are
//     escapes (any other backslash is kept);
//   - "!include FILE" and "!includedir DIR" (the .cnf files of DIR in byte
//     order) read other files, in any group and before any group, up to 10
//     levels deep; relative paths are resolved against baseDir (the server uses
//     its working directory; perfbisect passes the file's own directory and
//     rewrites the paths the same way in the effective file). A missing
//     !include is skipped (a warning here, silent in the server); a missing
//     !includedir, or either directive without a path, is an error;
//   - other lines starting with '!' are ignored (a warning).
//
// inlined says the file is embedded in the effective option file (its last
// line then always ends in a newline). Errors wrap ErrOptionFile and name the
// file and line.
func readOptionFile(path string, groups []string, baseDir string, inlined bool) (*OptionFileSet, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("%w %s: %v", ErrOptionFile, path, err)
	}
	want := map[string]bool{}
	for _, g := range groups {
		want[strings.ToLower(g)] = true
	}
	r := &cnfReader{want: want, base: baseDir, set: &OptionFileSet{}}
	b, err := os.ReadFile(abs)
	if err != nil {
		return nil, fmt.Errorf("%w %s: %v", ErrOptionFile, path, err)
	}
	if inlined && len(b) > 0 && b[len(b)-1] != '\n' {
		b = append(b, '\n')
	}
	if err := r.read(abs, b, 0); err != nil {
		return nil, err
	}
	return r.set, nil
}

type cnfReader struct {
	want map[string]bool
	base string
	set  *OptionFileSet
}

// isSpace is my_isspace for latin1: space, \t, \n, \v, \f, \r.
func isSpace(c byte) bool { return c == ' ' || (c >= '\t' && c <= '\r') }

func trimSpace(s string) string {
	i, j := 0, len(s)
	for i < j && isSpace(s[i]) {
		i++
	}
	for j > i && isSpace(s[j-1]) {
		j--
	}
	return s[i:j]
}

// read reads one file at include depth depth. An included file starts outside
// any group, and its headers do not change the including file's group. An error
// in an included file ends the reading of that file only (the server prints it
// and goes on): it becomes a warning.
func (r *cnfReader) read(file string, data []byte, depth int) error {
	err := r.readGroups(file, data, depth)
	if err != nil && depth > 0 {
		r.set.Warnings = append(r.set.Warnings, strings.TrimPrefix(err.Error(), ErrOptionFile.Error()+" ")+"; the server ignores the rest of that file")
		return nil
	}
	return err
}

func (r *cnfReader) readGroups(file string, data []byte, depth int) error {
	r.set.Files = append(r.set.Files, file)
	group, inGroup, wanted := "", false, false
	lines := strings.Split(string(data), "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	for i, raw := range lines {
		n := i + 1
		line := trimSpace(raw)
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if line[0] == '!' {
			// The reader sees the line as fgets returns it: with its newline,
			// except the last line of a file that does not end in one.
			text := strings.TrimLeftFunc(raw, func(c rune) bool { return c < 256 && isSpace(byte(c)) })
			if i < len(lines)-1 || strings.HasSuffix(string(data), "\n") {
				text += "\n"
			}
			if err := r.directive(file, n, text, depth); err != nil {
				return err
			}
			continue
		}
		if line[0] == '[' {
			end := strings.IndexByte(line, ']')
			if end < 0 {
				return fmt.Errorf("%w %s:%d: wrong group definition %q (a '[' without ']')", ErrOptionFile, file, n, line)
			}
			group = strings.TrimRightFunc(line[1:end], func(c rune) bool { return c < 256 && isSpace(byte(c)) })
			inGroup, wanted = true, r.want[strings.ToLower(group)]
			continue
		}
		if !inGroup {
			return fmt.Errorf("%w %s:%d: option %q without a preceding [group] (put it under [mysqld])", ErrOptionFile, file, n, line)
		}
		if !wanted {
			continue
		}
		line = removeEndComment(line)
		name, value, has := strings.Cut(line, "=")
		s := Setting{Name: trimSpace(name), HasValue: has, Group: group, File: file, Line: n}
		if has {
			s.Value = unquote(trimSpace(value))
		}
		r.set.Settings = append(r.set.Settings, s)
	}
	return nil
}

// directive handles a line starting with '!'.
// text is the line from '!' on, with its newline if it has one.
func (r *cnfReader) directive(file string, n int, text string, depth int) error {
	var kind, line string
	for _, d := range []string{"!includedir", "!include"} {
		if rest, ok := strings.CutPrefix(text, d); ok && rest != "" && isSpace(rest[0]) {
			kind = d
			// my_default.c get_argument: skip the blanks after the keyword,
			// drop the last character (the newline fgets keeps, whatever it
			// is), then the blanks before it.
			rest = strings.TrimLeftFunc(rest, func(c rune) bool { return c < 256 && isSpace(byte(c)) })
			if rest != "" {
				line = trimSpace(rest[:len(rest)-1])
			}
			if !strings.HasSuffix(text, "\n") && line != "" {
				r.set.Warnings = append(r.set.Warnings, fmt.Sprintf("%s:%d: the file does not end in a newline: the server reads %s as %s %q (its last character dropped)", file, n, strings.TrimSpace(text), kind, line))
			}
			break
		}
	}
	if kind == "" {
		r.set.Warnings = append(r.set.Warnings, fmt.Sprintf("%s:%d: %q is not a directive the server knows; it is ignored", file, n, trimSpace(text)))
		return nil
	}
	if line == "" {
		return fmt.Errorf("%w %s:%d: %s without a path", ErrOptionFile, file, n, kind)
	}
	if depth+1 > maxIncludeDepth {
		r.set.Warnings = append(r.set.Warnings, fmt.Sprintf("%s:%d: %s %s skipped: more than %d levels of includes (an include loop?)", file, n, kind, line, maxIncludeDepth))
		return nil
	}
	target := line
	if !filepath.IsAbs(target) {
		target = filepath.Join(r.base, target)
	}
	if kind == "!include" {
		b, err := os.ReadFile(target)
		if err != nil {
			r.set.Warnings = append(r.set.Warnings, fmt.Sprintf("%s:%d: !include %s: %v; the server skips it silently", file, n, line, errText(err)))
			return nil
		}
		return r.read(target, b, depth+1)
	}
	ents, err := os.ReadDir(target)
	if err != nil {
		return fmt.Errorf("%w %s:%d: !includedir %s: %v", ErrOptionFile, file, n, line, errText(err))
	}
	var names []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".cnf") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	for _, name := range names {
		p := filepath.Join(target, name)
		b, err := os.ReadFile(p)
		if err != nil {
			continue // a directory named *.cnf, an unreadable file: the server skips it
		}
		if err := r.read(p, b, depth+1); err != nil {
			return err
		}
	}
	return nil
}

func errText(err error) string {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err.Error()
	}
	return err.Error()
}

// removeEndComment cuts s at the first '#' outside single or double quotes (a
// backslash inside quotes escapes the next character).
func removeEndComment(s string) string {
	var quote byte
	escape := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c == '\'' || c == '"') && !escape {
			switch quote {
			case 0:
				quote = c
			case c:
				quote = 0
			}
		}
		if quote == 0 && c == '#' {
			return s[:i]
		}
		escape = quote != 0 && c == '\\' && !escape
	}
	return s
}

// unquote drops matching quotes around a value and resolves its escapes.
func unquote(v string) string {
	if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
		v = v[1 : len(v)-1]
	}
	if !strings.Contains(v, `\`) {
		return v
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c != '\\' || i == len(v)-1 {
			b.WriteByte(c)
			continue
		}
		i++
		switch v[i] {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case 'b':
			b.WriteByte('\b')
		case 's':
			b.WriteByte(' ')
		case '"', '\'', '\\':
			b.WriteByte(v[i])
		default:
			b.WriteByte('\\')
			b.WriteByte(v[i])
		}
	}
	return b.String()
}

// ServerGroups returns the option groups the server of in reads, by version
// rule (sql/mysqld.cc load_default_groups): every server reads [mysqld],
// [server] and [mysqld-X.Y]; MariaDB also [mariadb], [mariadb-X.Y] and
// [client-server] (5.5+), [galera] (10.1+, builds with wsrep), and [mariadbd],
// [mariadbd-X.Y] (10.4.6+). The order does not matter: settings are read in
// file order whatever group they are in.
func ServerGroups(in *Install) []string {
	return GroupsFor(in.Flavor, in.Version)
}

// GroupsFor returns the option groups a server of flavor and version v (nil:
// unknown) reads, as ServerGroups does for an installed server: for a source
// tree before it is built.
func GroupsFor(flavor Flavor, v *version.Version) []string {
	in := &Install{Flavor: flavor, Version: v}
	xy := ""
	if in.Version != nil {
		s := in.Version.Segments()
		xy = fmt.Sprintf("%d.%d", s[0], s[1])
	}
	g := []string{"mysqld", "server"}
	if xy != "" {
		g = append(g, "mysqld-"+xy)
	}
	if in.Flavor != MariaDB {
		return g
	}
	g = append(g, "mariadb", "client-server")
	if xy != "" {
		g = append(g, "mariadb-"+xy)
	}
	if in.atLeast("10.1") {
		g = append(g, "galera")
	}
	if in.atLeast("10.4.6") {
		g = append(g, "mariadbd")
		if xy != "" {
			g = append(g, "mariadbd-"+xy)
		}
	}
	return g
}

// Override is a setting of the user's option file that perfbisect replaces
// because it would put the server's files, socket or port outside its private
// run directory or run it as another account.
type Override struct {
	Setting Setting // the user's setting that loses (the last one of its key)
	Value   string  // what the server gets instead
}

// String is "FILE:LINE name=value -> value".
func (o Override) String() string {
	return fmt.Sprintf("%s %s -> %s", o.Setting.Where(), strings.TrimPrefix(o.Setting.Arg(), "--"), o.Value)
}

// overridden returns the user's settings (set, read for the server's groups)
// that the tool's override lines replace, in the order of the lines.
func overridden(set *OptionFileSet, lines []string) []Override {
	var out []Override
	for _, l := range lines {
		name, value, _ := strings.Cut(l, "=")
		key := Setting{Name: name}.Key()
		s, ok := set.Last(key)
		if !ok || (s.HasValue && s.Value == value) {
			continue
		}
		out = append(out, Override{Setting: s, Value: value})
	}
	return out
}

// unknownOptionRE matches the server's complaint about an option it does not
// know: "unknown variable 'innodb_mtflush_threads=16'" (MariaDB, MySQL 5.x),
// "unknown option '--foo'", MySQL 8's "unknown variable 'x=1'." alike.
var unknownOptionRE = regexp.MustCompile(`unknown (?:variable|option) '(?:--)?([^'=]+)`)

// unknownOptionHint returns advice for error-log lines that reject an option
// the user's option file sets: where it is set and how to make servers that
// lack it skip it. "" when the lines name no such option.
func unknownOptionHint(lines []string, set *OptionFileSet) string {
	for _, l := range lines {
		m := unknownOptionRE.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		name := m[1]
		where := ""
		if set != nil {
			if s, ok := set.Last(Setting{Name: name}.Key()); ok {
				where = " (set at " + s.Where() + ")"
			}
		}
		return fmt.Sprintf("this server does not know the option %s%s: remove it, or write it as loose-%s so that servers without it skip it (perfbisect never adds loose- itself)",
			name, where, strings.TrimPrefix(name, "loose-"))
	}
	return ""
}
