package cliflag

import (
	"fmt"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
)

// FlagsFirst moves the positional arguments of the commands named in
// positional after their flags, so that "perfbisect compare origin/main HEAD
// --format markdown" works as users write it (urfave/cli v2 stops parsing
// flags at the first argument). args is the whole command line (program
// name first). A flag's value is the next argument unless the flag is
// boolean or written --flag=value; everything after "--" stays positional;
// a value flag left without its value stays last, for the parser to say so;
// -h or --help before "--" leaves the command's help alone.
func FlagsFirst(app *cli.App, args []string, positional []string) []string {
	if len(args) < 2 || !slices.Contains(positional, args[1]) {
		return args
	}
	if args[len(args)-1] == "--generate-bash-completion" {
		return args // shell completion: urfave/cli reads the line as typed
	}
	cmd := command(app, args)
	if cmd == nil {
		return args
	}
	boolean := booleans(cmd)
	flags, pos := []string{}, []string{}
	rest := args[2:]
	for _, a := range rest {
		if a == "--" {
			break
		}
		if a == "-h" || a == "--help" || a == "-help" {
			// Help, whatever else was typed: urfave/cli would read the
			// arguments as help topics.
			return []string{args[0], args[1], "--help"}
		}
	}
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		switch {
		case a == "--":
			pos = append(pos, rest[i+1:]...)
			i = len(rest)
		case strings.HasPrefix(a, "-") && len(a) > 1:
			flags = append(flags, a)
			name := strings.TrimLeft(a, "-")
			if !strings.Contains(name, "=") && !boolean[name] {
				if i+1 == len(rest) {
					// A value flag with no value: leave it last, so that
					// the parser says so (it would take "--" for its value).
					return append([]string{args[0], args[1]}, flags...)
				}
				i++
				flags = append(flags, rest[i])
			}
		default:
			pos = append(pos, a)
		}
	}
	out := append(append([]string{args[0], args[1]}, flags...), "--")
	return append(out, pos...)
}

// command is the command args[1] names (its name or an alias), nil for
// none.
func command(app *cli.App, args []string) *cli.Command {
	if len(args) < 2 {
		return nil
	}
	for _, c := range app.Commands {
		if slices.Contains(c.Names(), args[1]) {
			return c
		}
	}
	return nil
}

// booleans are the names (and aliases) of cmd's switches, help's too.
func booleans(cmd *cli.Command) map[string]bool {
	boolean := map[string]bool{"help": true, "h": true}
	for _, f := range cmd.Flags {
		if _, ok := f.(*cli.BoolFlag); ok {
			for _, n := range f.Names() {
				boolean[n] = true
			}
		}
	}
	return boolean
}

// flagName is the name of the flag argument a ("--warmup-time=3" is
// "warmup-time"), "" when a is not a flag ("-", "--", "3").
func flagName(a string) string {
	if len(a) < 2 || a[0] != '-' || a == "--" {
		return ""
	}
	name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
	return name
}

// Typed maps each flag of the command in args (the whole command line,
// program name first) that the user gave under an alias to the alias as
// typed: {"warmup": "--warmup-time"}, so that messages name the flag as the
// user wrote it. Flags given under their own name are not in it.
func Typed(app *cli.App, args []string) map[string]string {
	cmd := command(app, args)
	if cmd == nil {
		return nil
	}
	alias := map[string]string{}
	for _, f := range cmd.Flags {
		for _, n := range f.Names()[1:] {
			alias[n] = f.Names()[0]
		}
	}
	typed := map[string]string{}
	eachFlag(cmd, args, func(name string) bool {
		if canonical, ok := alias[name]; ok {
			typed[canonical] = dashed(name)
		}
		return true
	})
	return typed
}

// eachFlag calls visit with the name of each flag that args (the whole
// command line, program name first) gives cmd, in order, until visit
// returns false. A flag's value is not visited, even when it looks like a
// flag (--cmake-args --old), nor anything after "--".
func eachFlag(cmd *cli.Command, args []string, visit func(name string) bool) {
	boolean := booleans(cmd)
	rest := args[2:]
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if a == "--" {
			return
		}
		name := flagName(a)
		if name == "" {
			continue
		}
		if !visit(name) {
			return
		}
		if !strings.Contains(a, "=") && !boolean[name] {
			i++ // its value
		}
	}
}

// Sets reports whether the command line args (program name first) gives
// the command's flag name, under its name or an alias. A value of another
// flag that looks like it (--workload-options -q) does not count, nor
// anything after "--".
func Sets(app *cli.App, args []string, name string) bool {
	cmd := command(app, args)
	if cmd == nil {
		return false
	}
	var names []string
	for _, f := range cmd.Flags {
		if slices.Contains(f.Names(), name) {
			names = f.Names()
		}
	}
	found := false
	eachFlag(cmd, args, func(n string) bool {
		found = slices.Contains(names, n)
		return !found
	})
	return found
}

// SwallowedFlag is the message for a value flag of the command in args
// whose value is another flag of the command or looks like one ("--good
// --bad v1": --good's value would be "--bad", and v1 an argument), "" when
// there is none. The flags in passthrough take other programs' options as
// values (--cmake-args -DX=1) and are not checked.
func SwallowedFlag(app *cli.App, args []string, passthrough []string) string {
	cmd := command(app, args)
	if cmd == nil || cmd.SkipFlagParsing {
		return "" // another program's command line (bench's is sysbench's)
	}
	known := map[string]bool{"help": true, "h": true, "version": true}
	for _, f := range cmd.Flags {
		for _, n := range f.Names() {
			known[n] = true
		}
	}
	boolean := booleans(cmd)
	rest := args[2:]
	for i := 0; i+1 < len(rest); i++ {
		a := rest[i]
		if a == "--" {
			break
		}
		name := flagName(a)
		if !known[name] || strings.Contains(a, "=") || boolean[name] {
			continue // a mistyped flag is the parser's to name
		}
		// A ref, a path or a number never starts with two dashes: such a
		// value is a flag, known or mistyped (--good --thraeds 4).
		next := flagName(rest[i+1])
		if (known[next] || strings.HasPrefix(rest[i+1], "--") && next != "") && !slices.Contains(passthrough, name) {
			return fmt.Sprintf("flag %s needs a value before %s (perfbisect %s %s VALUE %s ...)", dashed(name), dashed(next), cmd.Name, dashed(name), dashed(next))
		}
		i++ // its value
	}
	return ""
}

// Doc is how a flag is shown in --help: its category (urfave/cli sorts
// categories by name: number them) and the name of its value ("FILE";
// "" for a switch).
type Doc struct {
	Category    string
	Placeholder string
}

// Docs are the help categories and value names of flags, by flag name.
type Docs map[string]Doc

// DocTable makes Docs from a table of flag name -> {category, value name}.
func DocTable(table map[string][2]string) Docs {
	d := Docs{}
	for name, v := range table {
		d[name] = Doc{Category: v[0], Placeholder: v[1]}
	}
	return d
}

// Categorize puts the flags of cmds into their help categories (a flag not
// in d keeps none).
func (d Docs) Categorize(cmds []*cli.Command) {
	for _, cmd := range cmds {
		for _, f := range cmd.Flags {
			if doc, ok := d[f.Names()[0]]; ok {
				set(f, func(category, _ *string) { *category = doc.Category })
			}
		}
	}
}

// SetUsage gives the flags named in usage (by their first name) that help
// text instead of theirs: a flag shared by commands whose meaning differs
// by command. It returns flags.
func SetUsage(flags []cli.Flag, usage map[string]string) []cli.Flag {
	for _, f := range flags {
		if text, ok := usage[f.Names()[0]]; ok {
			set(f, func(_, u *string) { *u = text })
		}
	}
	return flags
}

// set calls change with the Category and Usage fields of flag f (of the
// kinds perfbisect uses; others are left alone).
func set(f cli.Flag, change func(category, usage *string)) {
	switch f := f.(type) {
	case *cli.StringFlag:
		change(&f.Category, &f.Usage)
	case *cli.IntFlag:
		change(&f.Category, &f.Usage)
	case *cli.Int64Flag:
		change(&f.Category, &f.Usage)
	case *cli.Float64Flag:
		change(&f.Category, &f.Usage)
	case *cli.BoolFlag:
		change(&f.Category, &f.Usage)
	case *cli.StringSliceFlag:
		change(&f.Category, &f.Usage)
	}
}

// Stringer returns a cli.FlagStringer that shows a flag with its value's
// name ("--my-cnf FILE") instead of "value", a flag that may be repeated
// once (its usage says when it may be), and a switch without "(default:
// false)"; base is the stringer it decorates (urfave/cli's).
func (d Docs) Stringer(base cli.FlagStringFunc) cli.FlagStringFunc {
	return func(f cli.Flag) string {
		s := strings.TrimSuffix(base(f), " (default: false)")
		doc, ok := d[f.Names()[0]]
		if !ok || doc.Placeholder == "" {
			return s
		}
		head, tail, found := strings.Cut(s, "\t")
		if !found {
			return s
		}
		if name, _, ok := strings.Cut(head, " [ "); ok {
			head = name // "--my-cnf value [ --my-cnf value ]"
		}
		return strings.ReplaceAll(head, " value", " "+doc.Placeholder) + "\t" + tail
	}
}
