// Command perfbisect finds the commit that made a MySQL-family server slower,
// and compares servers, settings and trees: it builds revisions of the
// server's source with CMake, starts each as a private mysqld with the user's
// option file, runs a workload (sysbench's OLTP, TPC-C, a SQL file, a Lua
// script) repeatedly, and searches with statistics for the first bad commit
// (start, run under git bisect run), or compares sides (compare), scans a
// history (scan) and says why one side is slower (explain). The commands'
// work is internal/app's; this package reads flags into its requests.
//
// Exit codes of every command but `run` (exitCodesHelp): 0 done, 1 failure
// of the tool or the machine, 2 usage or configuration, 3 no regression
// reproduced, 4 undecided (start's range or unresolved endpoints, compare's inconclusive), 5
// regression (compare, scan), 130 interrupted. `run` (git bisect run's
// script) exits 0 good, 1 bad, 125 skip, and 128 or more for everything else
// (see run.go).
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/perfbisect/perfbisect/internal/app"
	"github.com/perfbisect/perfbisect/internal/cliflag"
	"github.com/perfbisect/perfbisect/internal/spell"
	"github.com/perfbisect/perfbisect/internal/usage"
)

// release is the tool's release number; --version adds the commit it was
// built from (app.Version).
const release = "0.1.0"

// positionalCommands take positional arguments, which may come before
// their flags (cliflag.FlagsFirst).
var positionalCommands = []string{"compare", "explain", "scan", "report", "build", "mark", "replay"}

// defaultFlagStringer is urfave/cli's, which names every value "value".
var defaultFlagStringer = cli.FlagStringer

// exitCodesHelp is app.ExitCodesHelp (newApp's own app shadows the package).
var exitCodesHelp = app.ExitCodesHelp

// defaultHelpPrinter is urfave/cli's, which numbers nothing and sorts a
// category's flags by name.
var defaultHelpPrinter = cli.HelpPrinter

func main() {
	app.LimitMemory()
	if code, wrapped := runWrapper(os.Args); wrapped {
		os.Exit(code)
	}
	os.Exit(run(os.Args))
}

// run executes the CLI and returns the process exit code: the outcome of
// the command (app.Outcome) through exitCodes, or runExitCodes in the process
// that does run's work.
func run(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	cliApp := newApp()
	typedFlags = cliflag.Typed(cliApp, args)
	var err error
	if msg := cliflag.SwallowedFlag(cliApp, args, passthroughFlags); msg != "" {
		err = app.With(app.Usage, errors.New(msg))
	} else {
		err = cliApp.RunContext(ctx, cliflag.FlagsFirst(cliApp, args, positionalCommands))
	}
	codes := app.ExitCodes
	if os.Getenv(runChildEnv) != "" {
		codes = runExitCodes
	}
	code := func(o app.Outcome) int {
		if c, ok := codes[o]; ok {
			return c
		}
		return codes[app.Failure]
	}
	var e *app.Error
	switch {
	case err == nil:
		return code(app.Done)
	case errors.As(err, &e):
		if msg := app.Message(err); msg != "" {
			printError(err)
		}
		return code(e.Outcome)
	case errors.Is(err, app.ErrUsage): // a library's usage error (cliflag's, say)
		printError(err)
		return code(app.Usage)
	case ctx.Err() != nil:
		fmt.Fprintf(os.Stderr, "perfbisect: interrupted: %v\n", err)
		return code(app.Interrupted)
	default:
		// Errors from urfave/cli itself (unknown flag, missing required flag)
		// are usage errors.
		printError(err)
		return code(app.Usage)
	}
}

// flagError is cliflag.Error for the command of c (perfbisect's own
// options when c is the application's root).
func flagError(c *cli.Context, err error) string {
	if c == nil || c.Command == nil || c.Command.Name == "" || (c.App != nil && c.Command.Name == c.App.Name) {
		return cliflag.Error("", nil, err)
	}
	return cliflag.Error(c.Command.Name, c.Command.Flags, err)
}

// passthroughFlags take other programs' options as their values
// (--cmake-args -DWITH_SSL=system): a value that looks like a flag is theirs.
var passthroughFlags = []string{"cmake-args", "build-cmd", "install-cmd", "workload-options"}

// typedFlags are the flags of this command line given under an alias, by
// name ({"warmup": "--warmup-time"}): errors name them as typed.
var typedFlags map[string]string

// printError writes err on stderr as "perfbisect: message", the settings
// that usage errors name written as flags, as the user typed them.
func printError(err error) {
	fmt.Fprintf(os.Stderr, "perfbisect: %s\n", usage.TextNamed(err, func(name string) string {
		if t := typedFlags[name]; t != "" {
			return t
		}
		return "--" + name
	}))
}

// unknownCommand is the action of perfbisect with no command (the help) or
// with one it does not have (a usage error naming the nearest command).
func unknownCommand(c *cli.Context) error {
	if c.NArg() == 0 {
		return cli.ShowAppHelp(c)
	}
	name := c.Args().First()
	msg := fmt.Sprintf("%q is not a perfbisect command", name)
	best := ""
	if name == "version" {
		best = "--version"
	}
	if best == "" {
		var names []string
		for _, cmd := range c.App.Commands {
			names = append(names, cmd.Names()...)
		}
		best = spell.Nearest(name, names)
	}
	if best != "" {
		msg += fmt.Sprintf("; did you mean %s?", best)
	}
	return app.With(app.Usage, errors.New(msg+" (perfbisect help lists the commands)"))
}

func newApp() *cli.App {
	// --version only: -v is --verbose in the commands.
	cli.VersionFlag = &cli.BoolFlag{Name: "version", Usage: "print the version (release and commit) and exit"}
	app := &cli.App{
		Name:    "perfbisect",
		Version: app.Version(release),
		Usage:   "find the commit that made a MySQL-family server slower",
		Description: "perfbisect builds revisions of a MariaDB/MySQL/Percona source tree, runs each as a private\n" +
			"mysqld with your option file under a sysbench-compatible workload, decides with significance\n" +
			"tests whether each behaves like the good or the bad revision, and bisects to the first bad commit.",
		Commands: append([]*cli.Command{startCommand(), replayCommand(), runCommand(), compareCommand(), explainCommand(), scanCommand(), reportCommand(), benchCommand(), buildCommand(), taskCommand()}, append(sessionCommands(), simulateCommand())...),
		Suggest:  true, // "did you mean --threads?" for a mistyped flag
		// --my-cnf a,b.cnf is one file: a repeated flag is a list.
		DisableSliceFlagSeparator: true,
		EnableBashCompletion:      true, // perfbisect --generate-bash-completion; see urfave/cli's autocomplete scripts
		Action:                    unknownCommand,
		ExitErrHandler:            func(*cli.Context, error) {}, // exit codes are mapped in run
		OnUsageError: func(c *cli.Context, err error, _ bool) error {
			return app.With(app.Usage, errors.New(flagError(c, err)))
		},
	}
	flagDocs.Categorize(slices.DeleteFunc(slices.Clone(app.Commands), func(c *cli.Command) bool { return c.Name == "bench" || c.Name == "simulate" }))
	cli.FlagStringer = flagDocs.Stringer(defaultFlagStringer)
	cli.HelpPrinter = cliflag.HelpPrinter(defaultHelpPrinter)
	// One exit-code table in every command's help but run's (git bisect
	// run's protocol, in its own help) and bench's (its own, a subset).
	for _, cmd := range app.Commands {
		if cmd.Name != "run" && cmd.Name != "bench" {
			cmd.CustomHelpTemplate = cli.CommandHelpTemplate + "\n" + exitCodesHelp(cmd.Name) + "\n"
		}
	}
	app.CustomAppHelpTemplate = cli.AppHelpTemplate + "\n" + exitCodesHelp("") + "\n   perfbisect run has git bisect run's codes: see perfbisect run --help.\n"
	return app
}
