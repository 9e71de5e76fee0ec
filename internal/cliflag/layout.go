package cliflag

import (
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
	var cmd *cli.Command
	for _, c := range app.Commands {
		if c.Name == args[1] {
			cmd = c
		}
	}
	if cmd == nil {
		return args
	}
	boolean := map[string]bool{"help": true, "h": true}
	for _, f := range cmd.Flags {
		if _, ok := f.(*cli.BoolFlag); ok {
			for _, n := range f.Names() {
				boolean[n] = true
			}
		}
	}
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
			doc, ok := d[f.Names()[0]]
			if !ok {
				continue
			}
			switch f := f.(type) {
			case *cli.StringFlag:
				f.Category = doc.Category
			case *cli.IntFlag:
				f.Category = doc.Category
			case *cli.Int64Flag:
				f.Category = doc.Category
			case *cli.Float64Flag:
				f.Category = doc.Category
			case *cli.BoolFlag:
				f.Category = doc.Category
			}
		}
	}
}

// Stringer returns a cli.FlagStringer that shows a flag with its value's
// name ("--my-cnf FILE") instead of "value", and a switch without
// "(default: false)"; base is the stringer it decorates (urfave/cli's).
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
		return strings.ReplaceAll(head, " value", " "+doc.Placeholder) + "\t" + tail
	}
}
