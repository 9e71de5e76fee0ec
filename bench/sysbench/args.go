package sysbench

import (
	"fmt"
	"strings"

	"github.com/perfbisect/perfbisect/bench"
)

// sysbench command lines: the option names of sysbench 1.0 (and the 1.1 ones the
// workload offers), and the legacy 0.4.12 names bug reports quote
// (--test=oltp --oltp-read-only=on --oltp-table-size=N --num-threads=16 ...),
// translated with a note saying what they became. --test=oltp runs oltp_legacy,
// 0.4.12's own oltp workload (legacy.go).

// Invocation is a sysbench command line read by ParseArgs.
type Invocation struct {
	// Options are DefaultOptions changed by the arguments, not yet validated.
	Options bench.Options
	// Command is "prepare", "run", "cleanup" or "prewarm" if one was given.
	Command string
	// Conn is DefaultConnection changed by the --mysql-* options, and
	// ConnOptions lists those that were given ("--mysql-socket=/tmp/x.sock"),
	// for a caller that starts its own server and ignores them.
	Conn        bench.Connection
	ConnOptions []string
	// Notes say, one per option, how a legacy or connection option was
	// translated or why it was ignored.
	Notes []string
	// Custom is the workload word when it names a sysbench script or a SQL
	// workload file (ParseCustomArgs), and CustomArgs its own options.
	Custom     string
	CustomArgs []string
}

// scriptGeneral are the sysbench options ParseCustomArgs reads itself for a
// script (into Options), the connection's besides.
var scriptGeneral = map[string]bool{"threads": true, "num-threads": true, "time": true, "max-time": true,
	"warmup-time": true, "rand-seed": true, "percentile": true, "report-interval": true}

// connOptions are the connection's --mysql-* options (Connection.set).
var connOptions = map[string]bool{"mysql-socket": true, "mysql-host": true, "mysql-port": true, "mysql-user": true,
	"mysql-password": true, "mysql-db": true}

// ParseCustomArgs reads a sysbench command line whose workload is a script
// or a SQL workload file (WorkloadKind): its first word that is neither an
// option, an option's value nor a command. The connection options, the
// command and sysbench's general options perfbisect honours (threads,
// time, warmup-time, rand-seed, percentile, report-interval) are read as
// ParseArgs reads them; every other option is the workload's own and goes
// to CustomArgs as --name=value. ok is false when the command line's
// workload is an OLTP one (ParseArgs reads it).
func ParseCustomArgs(args []string) (inv *Invocation, ok bool, err error) {
	var general, own []string
	script := ""
	isCommand := func(a string) bool { return a == "prepare" || a == "run" || a == "cleanup" || a == "prewarm" }
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "--") {
			if script == "" && !isCommand(a) && !strings.HasPrefix(a, "-") {
				if bench.WorkloadKind(a) == bench.KindOLTP {
					return nil, false, nil
				}
				script = a
				continue
			}
			if script != "" && !isCommand(a) && !strings.HasPrefix(a, "-") {
				return nil, true, fmt.Errorf("%w: %q after the workload %s: not a command (prepare, run or cleanup); options are --name=value", bench.ErrInvalidOption, a, script)
			}
			general = append(general, a)
			continue
		}
		name, _, hasValue := strings.Cut(a[2:], "=")
		key := bench.OptionName(name)
		if !hasValue && i+1 < len(args) && !strings.HasPrefix(args[i+1], "--") && !isCommand(args[i+1]) {
			i++
			a += "=" + args[i]
		}
		if scriptGeneral[key] || connOptions[key] {
			general = append(general, a)
		} else {
			own = append(own, a)
		}
	}
	if script == "" {
		return nil, false, nil
	}
	inv, err = ParseArgs(general)
	if err != nil {
		return nil, true, err
	}
	inv.Custom, inv.CustomArgs = script, own
	return inv, true, nil
}

// ParseArgs reads a sysbench command line, such as
//
//	oltp_read_only --tables=4 --table-size=100000 --threads=8 --time=60 run
//	--test=oltp --oltp-read-only=on --oltp-table-size=1000000 --num-threads=16 --max-time=60 run
//
// The workload may be given by name or as a path to the .lua script. Values are
// "--name=value" or "--name value"; booleans accept on/off, true/false, yes/no,
// 1/0 and a bare "--name" for on. Durations are whole seconds, as in sysbench,
// or Go durations ("1m30s"). Errors wrap ErrUnknownOption or ErrInvalidOption
// and name the argument.
func ParseArgs(args []string) (*Invocation, error) {
	return ParseArgsOver(bench.DefaultOptions(), args)
}

// ParseArgsOver is ParseArgs starting from o instead of DefaultOptions: the
// arguments change only the options they name (for sysbench options given on
// top of perfbisect's own workload flags).
func ParseArgsOver(o bench.Options, args []string) (*Invocation, error) {
	inv := &Invocation{Options: o, Conn: bench.DefaultConnection()}
	set := inv.Options.Setter()
	workload := ""
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "--") {
			switch a {
			case "prepare", "run", "cleanup", "prewarm":
				if inv.Command != "" {
					return nil, fmt.Errorf("%w: %q after %q: one command (prepare, run or cleanup) at a time", bench.ErrInvalidOption, a, inv.Command)
				}
				inv.Command = a
			default:
				if strings.HasPrefix(a, "-") {
					return nil, fmt.Errorf("%w %q: sysbench options start with --", bench.ErrUnknownOption, a)
				}
				if workload != "" {
					return nil, fmt.Errorf("%w: %q after the workload %q: one workload at a time (or a value without its option?)", bench.ErrUnknownWorkload, a, workload)
				}
				workload = a
				inv.Options.Workload = bench.WorkloadName(a)
			}
			continue
		}
		name, value, hasValue := strings.Cut(a[2:], "=")
		key := bench.OptionName(name)
		if !hasValue {
			boolean := bench.IsBoolOption(key)
			switch {
			case boolean && i+1 < len(args) && bench.IsBoolWord(args[i+1]):
				// "--skip-trx off": the next word is the value, not the workload.
				i++
				value = args[i]
			case boolean || i+1 >= len(args) || strings.HasPrefix(args[i+1], "--"):
				value = "on"
			default:
				i++
				value = args[i]
			}
		}
		if ok, err := inv.Conn.Set(key, value); ok {
			if err != nil {
				return nil, fmt.Errorf("argument %q: %w", a, err)
			}
			inv.ConnOptions = append(inv.ConnOptions, "--"+key+"="+value)
			continue
		}
		note, err := set.Set(key, value)
		if err != nil {
			return nil, fmt.Errorf("argument %q: %w", a, err)
		}
		if note != "" {
			inv.Notes = append(inv.Notes, note)
		}
	}
	if note := set.Done(); note != "" {
		inv.Notes = append(inv.Notes, note)
	}
	return inv, nil
}
