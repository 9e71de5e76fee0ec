package sysbench

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/perfbisect/perfbisect/bench"
	"github.com/perfbisect/perfbisect/internal/usage"
)

// Script is any sysbench Lua script as a Workload: real sysbench runs the
// script's own prepare (its own tables) and its run, with the script's own
// options (Args), and its report is read as Run reads one. The
// script's cleanup is never needed in a bisection (every run restores the
// prepared datadir). Make one with NewScript.
type Script struct {
	// Path is the script, absolute.
	Path string
	// Args are the script's own options as on sysbench's command line
	// ("--scale=1", "--tables=1"), passed to prepare and run.
	Args []string
	// Options holds the sysbench settings perfbisect sets itself: Threads,
	// Time, Warmup, RandSeed (prepare and run: the same data for every
	// revision), Percentile and ReportInterval. Its Workload is the
	// script's file name. The other fields are not used.
	Options bench.Options
	// Sysbench is the binary and its output and hooks.
	Sysbench Binary
	// Version is sysbench's, as Version says it ("sysbench 1.0.20").
	Version string
	// Files are the script and the files it requires from beside it
	// (transitively), relative to its directory, sorted.
	Files []string
	// Digest is the hex SHA-256 of Files' names and contents.
	Digest string
	// Transactions says whether the files send BEGIN, START TRANSACTION or
	// COMMIT (a string literal that starts with one): tps is the headline
	// then, and qps otherwise (Metrics).
	Transactions bool

	fileDigests map[string]string // each of Files: the first 12 hex digits of its SHA-256
}

// ErrScript is wrapped by NewScript for a script that cannot be found,
// read or loaded by sysbench, or options it does not take.
var ErrScript = errors.New("sysbench script")

// ownedScriptOptions are sysbench options perfbisect sets itself for a
// script: given in a script's Args they are refused with what to use.
var ownedScriptOptions = map[string]string{
	"threads": "give {threads}", "num-threads": "give {threads}",
	"time": "give {time}", "max-time": "give {time}",
	"warmup-time": "give {warmup}",
	"events":      "a run is a timed window: give {time}", "max-requests": "a run is a timed window: give {time}",
	"report-interval": "leave it out: every second is read", "report-checkpoints": "leave it out: the window's report is read",
	"db-driver": "leave it out: the MySQL driver is used", "config-file": "leave it out",
	"mysql-host": "leave it out: the workload connects to the server measured", "mysql-port": "leave it out: the workload connects to the server measured",
	"mysql-socket": "leave it out: the workload connects to the server measured", "mysql-user": "leave it out: the workload connects to the server measured",
	"mysql-password": "leave it out: the workload connects to the server measured", "mysql-db": "leave it out: the workload connects to the server measured",
}

// NewScript finds the script name (a path, or a script name sysbench finds
// in its own directory: select_random_ranges), reads it and what it
// requires from beside it, checks that sysbench loads it and takes args
// (by its help command), and returns the Workload. o gives the settings
// perfbisect sets (Script.Options); --rand-seed and --percentile in args
// go there. Errors wrap ErrScript, ErrInvalidOption (an option perfbisect
// sets itself, a value sysbench 1.0 cannot take) or ErrNoSysbench.
func NewScript(ctx context.Context, name string, args []string, o bench.Options, sb Binary) (*Script, error) {
	path, err := FindScript(name, sb.Path)
	if err != nil {
		return nil, err
	}
	s := &Script{Path: path, Options: o, Sysbench: sb}
	s.Options.Workload = filepath.Base(path)
	for _, a := range args {
		key, value, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		key = bench.OptionName(key)
		if !strings.HasPrefix(a, "--") {
			return nil, fmt.Errorf("%w: %q: give the script's options as --name=value (perfbisect runs prepare and run itself)", bench.ErrInvalidOption, a)
		}
		if use, ok := ownedScriptOptions[key]; ok {
			return nil, usage.Errorf("%w: --%s: perfbisect sets it, not the script's options; "+use, bench.ErrInvalidOption, key)
		}
		switch key {
		case "rand-seed", "percentile":
			if _, err := s.Options.Set(key, value); err != nil {
				return nil, err
			}
			continue
		}
		s.Args = append(s.Args, a)
	}
	if err := s.check(); err != nil {
		return nil, err
	}
	if s.Files, s.Digest, err = scriptFiles(path); err != nil {
		return nil, err
	}
	s.fileDigests = map[string]string{}
	for _, f := range s.Files {
		b, err := os.ReadFile(filepath.Join(filepath.Dir(path), f))
		if err != nil {
			return nil, fmt.Errorf("%w %s: %v", ErrScript, path, err)
		}
		sum := sha256.Sum256(b)
		s.fileDigests[f] = hex.EncodeToString(sum[:6])
		s.Transactions = s.Transactions || trxStatement.Match(b)
	}
	if s.Version, err = Version(ctx, sb.Path); err != nil {
		return nil, err
	}
	// sysbench's help loads the script (syntax, requires) and refuses an
	// option the script does not declare: before anything is built.
	out, err := s.command(ctx, "help")
	if err != nil && !bytes.Contains(out, []byte("does not implement the 'help' command")) {
		with := ""
		if len(s.Args) > 0 {
			with = " with " + strings.Join(s.Args, " ")
		}
		return nil, fmt.Errorf("%w %s: sysbench refuses it%s: %s", ErrScript, path, with, sysbenchComplaint(out))
	}
	return s, nil
}

// sysbenchComplaint is what sysbench's output says went wrong: its FATAL
// and "invalid option" lines, else its last lines, without its banner.
func sysbenchComplaint(out []byte) string {
	var said, rest []string
	for _, l := range strings.Split(string(out), "\n") {
		l = strings.TrimSpace(l)
		switch {
		case l == "" || strings.HasPrefix(l, "sysbench ") && strings.Contains(l, "(using"):
		case strings.HasPrefix(l, "FATAL") || strings.HasPrefix(l, "invalid option"):
			said = append(said, l)
		default:
			rest = append(rest, l)
		}
	}
	if len(said) == 0 {
		said = rest[max(0, len(rest)-4):]
	}
	return strings.Join(said, "; ")
}

// check refuses what sysbench 1.0 cannot take (whole seconds and
// percentiles, a 32-bit seed).
func (s *Script) check() error {
	o := s.Options
	switch {
	case o.Threads < 1:
		return fmt.Errorf("%w: --threads=%d: must be >= 1", bench.ErrInvalidOption, o.Threads)
	case o.Time%time.Second != 0 || o.Warmup%time.Second != 0 || o.Time <= 0:
		return fmt.Errorf("--time=%s --warmup-time=%s: %w: sysbench counts whole seconds", o.Time, o.Warmup, ErrNotInSysbench)
	case o.Percentile != math.Trunc(o.Percentile) || o.Percentile < 1 || o.Percentile > 100:
		return fmt.Errorf("--percentile=%g: %w: sysbench takes a whole percentile from 1 to 100", o.Percentile, ErrNotInSysbench)
	case o.RandSeed < 0 || o.RandSeed > math.MaxInt32:
		return fmt.Errorf("--rand-seed=%d: %w: sysbench takes a seed from 0 to %d", o.RandSeed, ErrNotInSysbench, math.MaxInt32)
	}
	return nil
}

// FindScript returns the absolute path of the sysbench script name: name
// itself when it is a path (it has a / or ends in .lua), else NAME.lua in
// sysbench's script directory (share/sysbench beside the binary sysbench,
// "" for PATH's, is in; then /usr/local/share/sysbench and
// /usr/share/sysbench). Errors wrap ErrScript and say where it looked.
func FindScript(name, sysbench string) (string, error) {
	if strings.Contains(name, "/") || strings.HasSuffix(name, ".lua") {
		abs, err := filepath.Abs(name)
		if err != nil {
			return "", fmt.Errorf("%w %s: %v", ErrScript, name, err)
		}
		st, err := os.Stat(abs)
		switch {
		case err != nil && !strings.Contains(name, "/"):
			base := strings.TrimSuffix(name, ".lua")
			hint := ""
			if bench.WorkloadKind(base) == bench.KindOLTP {
				hint = fmt.Sprintf(" (%s, without .lua, is the built-in workload; a path such as /usr/share/sysbench/%s is sysbench's script)", base, name)
			} else if p, ferr := FindScript(base, sysbench); ferr == nil {
				hint = fmt.Sprintf(" (%s, without .lua, is sysbench's %s)", base, p)
			}
			return "", fmt.Errorf("%w %s: %v%s", ErrScript, name, errors.Unwrap(err), hint)
		case err != nil:
			return "", fmt.Errorf("%w %s: %v", ErrScript, name, errors.Unwrap(err))
		case !st.Mode().IsRegular():
			return "", fmt.Errorf("%w %s: not a file", ErrScript, name)
		}
		return abs, nil
	}
	dirs := ScriptDirs(sysbench)
	for _, d := range dirs {
		p := filepath.Join(d, name+".lua")
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w %q: no %s.lua in %s (give a script's path, or one of: %s)", ErrScript, name, name,
		strings.Join(dirs, ", "), strings.Join(Scripts(sysbench), ", "))
}

// ScriptDirs lists the directories FindScript looks in for a script name,
// those that exist, in order.
func ScriptDirs(sysbench string) []string {
	var dirs []string
	if sysbench == "" {
		sysbench = "sysbench"
	}
	if bin, err := exec.LookPath(sysbench); err == nil {
		if real, err := filepath.EvalSymlinks(bin); err == nil {
			dirs = append(dirs, filepath.Join(filepath.Dir(filepath.Dir(real)), "share", "sysbench"))
		}
	}
	dirs = append(dirs, "/usr/local/share/sysbench", "/usr/share/sysbench")
	var out []string
	for _, d := range dirs {
		if st, err := os.Stat(d); err == nil && st.IsDir() && !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

// Scripts lists the script names in ScriptDirs (without .lua, sorted; the
// modules other scripts require, such as oltp_common, left out).
func Scripts(sysbench string) []string {
	var names []string
	for _, d := range ScriptDirs(sysbench) {
		ents, _ := os.ReadDir(d)
		for _, e := range ents {
			n, ok := strings.CutSuffix(e.Name(), ".lua")
			if !ok || strings.HasSuffix(n, "_common") || slices.Contains(names, n) {
				continue
			}
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names
}

var (
	// luaRequire matches require "name", require("name") and require 'name'.
	luaRequire = regexp.MustCompile(`\brequire\s*\(?\s*["']([A-Za-z0-9_.\-/]+)["']`)
	// luaLoad matches dofile("file") and loadfile("file").
	luaLoad = regexp.MustCompile(`\b(?:dofile|loadfile)\s*\(?\s*["']([A-Za-z0-9_.\-/]+)["']`)
	// luaDynamic matches a require, dofile or loadfile of a computed name.
	luaDynamic = regexp.MustCompile(`\b(?:require|dofile|loadfile)\s*\(\s*[^"'\s)]`)
)

// scriptFiles returns the script and the files it requires or loads
// (dofile, loadfile) from its own directory (a module a.b is a/b.lua
// there), transitively, relative to that directory and sorted, and the hex
// SHA-256 of their names and contents. When a file loads one by a computed
// name, every .lua file of the directory is taken.
func scriptFiles(path string) (files []string, digest string, err error) {
	dir := filepath.Dir(path)
	seen := map[string][]byte{}
	queue := []string{filepath.Base(path)}
	dynamic := false
	for len(queue) > 0 {
		rel := queue[0]
		queue = queue[1:]
		if _, ok := seen[rel]; ok {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, rel))
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && len(seen) > 0 {
				continue // a module from elsewhere on sysbench's path
			}
			return nil, "", fmt.Errorf("%w %s: %v", ErrScript, path, err)
		}
		seen[rel] = b
		for _, m := range luaRequire.FindAllSubmatch(b, -1) {
			mod := strings.ReplaceAll(string(m[1]), ".", "/") + ".lua"
			if !strings.Contains(mod, "..") {
				queue = append(queue, mod)
			}
		}
		for _, m := range luaLoad.FindAllSubmatch(b, -1) {
			if f := filepath.Clean(string(m[1])); !filepath.IsAbs(f) && !strings.HasPrefix(f, "..") {
				queue = append(queue, f)
			}
		}
		if !dynamic && luaDynamic.Match(b) {
			dynamic = true
			all, _ := filepath.Glob(filepath.Join(dir, "*.lua"))
			for _, f := range all {
				queue = append(queue, filepath.Base(f))
			}
		}
	}
	for rel := range seen {
		files = append(files, rel)
	}
	slices.Sort(files)
	h := sha256.New()
	for _, f := range files {
		fmt.Fprintf(h, "%s\x00%d\x00", f, len(seen[f]))
		h.Write(seen[f])
	}
	return files, hex.EncodeToString(h.Sum(nil)), nil
}

// Name is the script's file name.
func (s *Script) Name() string { return filepath.Base(s.Path) }

// Summary says the script, its options, threads, window and seed, and
// sysbench's version.
func (s *Script) Summary() string {
	o := s.Options
	opts := ""
	if len(s.Args) > 0 {
		opts = " " + strings.Join(s.Args, " ")
	}
	return fmt.Sprintf("%s%s, %d thread(s), %s window after %s warm-up, rand-seed %d, script %s (content %.12s), run by %s",
		s.Name(), opts, o.Threads, o.Time, o.Warmup, o.RandSeed, s.Path, s.Digest, s.Version)
}

// Threads is Options.Threads.
func (s *Script) Threads() int { return s.Options.Threads }

// WithThreads returns a copy at n threads.
func (s *Script) WithThreads(n int) bench.Workload {
	c := *s
	c.Options.Threads = n
	return &c
}

// Percentile is Options.Percentile.
func (s *Script) Percentile() float64 { return s.Options.Percentile }

// baseArgs are the arguments of every command: the script, the
// connection, the threads and the seed, then the script's own options.
func (s *Script) baseArgs(conn bench.Connection) []string {
	args := append([]string{s.Path, "--db-driver=mysql", "--db-ps-mode=auto"}, conn.Args()...)
	args = append(args, fmt.Sprintf("--threads=%d", s.Options.Threads), fmt.Sprintf("--rand-seed=%d", s.Options.RandSeed))
	return append(args, s.Args...)
}

// call is a sysbench process of the script for command, run in the
// script's directory with it first on LUA_PATH (its requires).
func (s *Script) call(conn bench.Connection, command string) sysbenchCall {
	dir := filepath.Dir(s.Path)
	c := sysbenchCall{what: s.Path, command: command, dir: dir, env: []string{"LUA_PATH=" + dir + "/?.lua;;"}}
	c.args = s.baseArgs(conn)
	if command == "run" {
		secs := func(d time.Duration) int { return int(d / time.Second) }
		o := s.Options
		c.args = append(c.args, fmt.Sprintf("--time=%d", secs(o.Warmup+o.Time)), "--report-interval=1", "--events=0",
			fmt.Sprintf("--percentile=%g", o.Percentile))
		if o.Warmup > 0 {
			c.args = append(c.args, fmt.Sprintf("--report-checkpoints=%d", secs(o.Warmup)))
		}
		c.warm, c.reportInterval = secs(o.Warmup), o.ReportInterval
	}
	c.args = append(c.args, command)
	return c
}

// command runs sysbench's help for the script, without a server, and
// returns its output.
func (s *Script) command(ctx context.Context, command string) ([]byte, error) {
	bin := s.Sysbench.Path
	if bin == "" {
		bin = "sysbench"
	}
	args := append([]string{s.Path}, s.Args...)
	cmd := exec.CommandContext(ctx, bin, append(args, command)...)
	cmd.Dir = filepath.Dir(s.Path)
	cmd.Env = append(os.Environ(), "LUA_PATH="+cmd.Dir+"/?.lua;;")
	out, err := cmd.CombinedOutput()
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			return out, fmt.Errorf("%w: %v", ErrNoSysbench, err)
		}
	}
	return out, err
}

// Prepare runs the script's prepare with the fixed seed; a script
// without a prepare command has nothing to prepare.
func (s *Script) Prepare(ctx context.Context, conn bench.Connection) error {
	_, _, err := s.Sysbench.exec(ctx, conn, s.call(conn, "prepare"))
	return notImplemented(err, "prepare")
}

// notImplemented is err, or nil when sysbench said the script has no such
// command.
func notImplemented(err error, command string) error {
	var se *Error
	if errors.As(err, &se) && strings.Contains(se.Output, "does not implement the '"+command+"' command") {
		return nil
	}
	return err
}

// Run runs the script's run over Options.Warmup + Options.Time and reads
// the window's report (ParseReport).
func (s *Script) Run(ctx context.Context, conn bench.Connection, hooks bench.Hooks) (*bench.Result, error) {
	sb := s.Sysbench
	sb.Hooks = hooks
	out, cpu, err := sb.exec(ctx, conn, s.call(conn, "run"))
	if err != nil {
		return nil, err
	}
	res, err := ParseReport(out, s.Options)
	if res != nil {
		res.ClientCPU = cpu
	}
	return res, err
}

// Cleanup runs the script's cleanup, if it has one.
func (s *Script) Cleanup(ctx context.Context, conn bench.Connection) error {
	_, _, err := s.Sysbench.exec(ctx, conn, s.call(conn, "cleanup"))
	return notImplemented(err, "cleanup")
}

// Identity names the script's path and content (with what it requires),
// sysbench's version, the script's options and perfbisect's settings.
func (s *Script) Identity() map[string]string {
	o := s.Options
	fields := map[string]string{
		"script": s.Path, "script content": s.Digest[:16], "sysbench": s.Version,
		"options": strings.Join(s.Args, " "), "threads": fmt.Sprint(o.Threads),
		"time": o.Time.String(), "warmup": o.Warmup.String(), "rand-seed": fmt.Sprint(o.RandSeed),
		"percentile": fmt.Sprint(o.Percentile),
	}
	for f, d := range s.fileDigests {
		fields["script file "+f] = d
	}
	return bench.IdentityOf(fields)
}

// DataKey is the script's content, options, seed and threads (its prepare
// loads in parallel by thread) and sysbench's version.
func (s *Script) DataKey() string {
	return fmt.Sprintf("script %s %s args=%q seed=%d threads=%d", s.Digest, s.Version, s.Args, s.Options.RandSeed, s.Options.Threads)
}

// ClientInProcess is false: sysbench is another process.
func (s *Script) ClientInProcess() bool { return false }

// trxStatement finds a Lua string literal that starts a transaction
// statement: "BEGIN", 'COMMIT', [[START TRANSACTION ...]], in any case.
var trxStatement = regexp.MustCompile(`(?i)(["']|\[\[)\s*(begin|commit|start\s+transaction)\b`)

// Metrics are bench.StandardMetrics (tps first) for a script that sends
// transactions, bench.QueryMetrics (qps first) for one that does not.
func (s *Script) Metrics() []string {
	if s.Transactions {
		return bench.StandardMetrics
	}
	return bench.QueryMetrics
}
