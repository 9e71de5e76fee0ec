package serverctl

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ErrOptionFile is wrapped by errors about the user's option file (missing,
// unreadable, not a regular file, or a setting the tool cannot make private).
var ErrOptionFile = errors.New("option file")

// Overrides are the settings the tool forces on every server it starts. They come
// after the user's settings in the effective file, so they win (MySQL's rule:
// the last setting read wins) — except user, where mysqld keeps the first one,
// so it is written before the user's settings too.
type Overrides struct {
	Basedir  string
	Datadir  string
	Socket   string
	Port     int
	PidFile  string
	LogError string
	Tmpdir   string
	User     string
	RunDir   string
	// Extra are further option lines ("log-bin=/run/dir/data/mysql-bin") that
	// relocate paths the user's settings point elsewhere (see privatePaths).
	Extra []string
	// Settings are the caller's own option lines (Options.Settings), last.
	Settings []string
}

// lines renders the overrides as option-file lines for the [mysqld] group.
func (o Overrides) lines() []string {
	l := []string{
		"basedir=" + o.Basedir,
		"datadir=" + o.Datadir,
		"innodb_data_home_dir=" + o.Datadir,
		"innodb_log_group_home_dir=" + o.Datadir,
		"socket=" + o.Socket,
		"port=" + strconv.Itoa(o.Port),
		"bind-address=127.0.0.1",
		"pid-file=" + o.PidFile,
		"log-error=" + o.LogError,
		"tmpdir=" + o.Tmpdir,
		"general_log_file=" + filepath.Join(o.RunDir, "general.log"),
		"slow_query_log_file=" + filepath.Join(o.RunDir, "slow.log"),
		"user=" + o.User,
		// A restored snapshot must not load a buffer pool dump in the
		// background during the measured window: every run starts cold and
		// warms up in its warm-up (MariaDB 10.0+, MySQL 5.6+; loose for older).
		"loose-innodb-buffer-pool-load-at-startup=OFF",
		"loose-innodb-buffer-pool-dump-at-shutdown=OFF",
	}
	return append(append(l, o.Extra...), o.Settings...)
}

// CheckOptionFile returns an error wrapping ErrOptionFile when path is not a
// readable regular file; it names the file and what to do.
func CheckOptionFile(path string) error {
	if path == "" {
		return nil
	}
	st, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("%w %s: %v (pass an existing my.cnf with --my-cnf)", ErrOptionFile, path, err)
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%w %s: not a regular file (pass a my.cnf file with --my-cnf)", ErrOptionFile, path)
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("%w %s: %v", ErrOptionFile, path, err)
	}
	return f.Close()
}

// inline returns the user's option file as text to embed in the effective file,
// ending in a newline. Relative !include and !includedir paths keep working
// because every program that reads the effective file runs in the user's
// file's directory (optionDir).
func inline(userFile string) (string, error) {
	if userFile == "" {
		return "", nil
	}
	if err := CheckOptionFile(userFile); err != nil {
		return "", err
	}
	b, err := os.ReadFile(userFile)
	if err != nil {
		return "", fmt.Errorf("%w %s: %v", ErrOptionFile, userFile, err)
	}
	text := string(b)
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	return text, nil
}

// writeEffective writes the option file the server gets to dst: user first (mysqld
// keeps the first user setting), then the user's file inlined (so the server's own
// parser reads its groups, includes and loose- prefixes), then the overrides in
// [mysqld], which win.
func writeEffective(dst, userFile, userText string, o Overrides) error {
	var b strings.Builder
	b.WriteString("# Effective option file written by perfbisect.\n")
	fmt.Fprintf(&b, "[mysqld]\n# mysqld keeps the first user= it reads.\nuser=%s\n\n", o.User)
	if userFile != "" {
		fmt.Fprintf(&b, "# ---- the user's option file %s ----\n%s\n# ---- end of the user's option file ----\n\n", userFile, userText)
	}
	b.WriteString("# perfbisect's overrides (private run directory, loopback only):\n[mysqld]\n")
	for _, l := range o.lines() {
		if strings.HasPrefix(l, "user=") {
			continue // written first, where it counts
		}
		b.WriteString(l + "\n")
	}
	return os.WriteFile(dst, []byte(b.String()), 0o600)
}

// printDefaults runs `server --defaults-file=F --print-defaults` and returns the
// server options it would start with, in order (groups, includes and version
// groups resolved by the server's own reader).
func printDefaults(ctx context.Context, in *Install, file, dir string) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, in.Server, "--defaults-file="+file, "--print-defaults")
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, &out, &out
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s --print-defaults: %w: %s", filepath.Base(in.Server), err, lastLines(out.String(), 3))
	}
	return parsePrintDefaults(out.String()), nil
}

// parsePrintDefaults reads the argument line of --print-defaults output
// ("... would have been started with the following arguments:\n--a=1 --b ...").
// Values containing " --" cannot be told apart and are split there.
func parsePrintDefaults(out string) []string {
	var line string
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if strings.Contains(l, "following arguments") && i+1 < len(lines) {
			line = strings.TrimSpace(lines[i+1])
			break
		}
	}
	if line == "" {
		return nil
	}
	var args []string
	for _, p := range strings.Split(" "+line, " --") {
		if p = strings.TrimSpace(p); p != "" {
			args = append(args, "--"+p)
		}
	}
	return args
}

// UserOptions returns the server options the user's option file gives the server
// under test, as that server's own reader resolves them (groups, !include,
// version groups): the identity of "the option file" for caches and reports.
func UserOptions(ctx context.Context, in *Install, userFile, tmpDir string) ([]string, error) {
	text, err := inline(userFile)
	if err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(tmpDir, "user-*.cnf")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	_, werr := f.WriteString(text)
	f.Close()
	if werr != nil {
		return nil, werr
	}
	return printDefaults(ctx, in, f.Name(), optionDir(userFile, tmpDir))
}

// optionDir is the working directory of every program that reads the user's
// option file (--print-defaults, install-db, the server): the file's own
// directory, so that the relative !include and !includedir paths of included
// files resolve as readOptionFile resolves them (the server reads options
// before it changes to its datadir). Without a file: fallback.
func optionDir(userFile, fallback string) string {
	if userFile == "" {
		return fallback
	}
	abs, err := filepath.Abs(userFile)
	if err != nil {
		return fallback
	}
	return filepath.Dir(abs)
}

// privatePaths inspects the options the server would read and returns override
// lines that move every file the user's settings would put outside the run
// directory into it: binary and relay logs (and their index files), the Aria log
// directory, InnoDB's undo and temporary directories, secure-file-priv, audit
// logs, the slow and DDL-recovery logs, the buffer pool dump, the keyring file,
// the MyISAM and SQL error logs; a second fixed port is turned off. What no
// override can fix is refused earlier, by CheckSettings.
func privatePaths(args []string, o Overrides) []string {
	var extra []string
	seen := map[string]bool{}
	for _, a := range args {
		n, val, has := strings.Cut(strings.TrimLeft(a, "-"), "=")
		name := strings.ToLower(Setting{Name: n}.Key()) // as before: case-insensitive, to miss nothing
		if seen[name] {
			continue
		}
		switch name {
		case "log_bin", "relay_log", "log_bin_index", "relay_log_index", "relay_log_info_file", "master_info_file":
			if has && outside(val, o) {
				seen[name] = true
				extra = append(extra, strings.ReplaceAll(name, "_", "-")+"="+filepath.Join(o.Datadir, filepath.Base(val)))
			}
		case "server_audit_file_path", "audit_log_file", "log_slow_query_file", "log_ddl_recovery", "innodb_buffer_pool_filename",
			"keyring_file_data", "log_isam", "sql_error_log_filename":
			// Plugin and server files that take a path: MariaDB's audit log,
			// Percona's audit log, the slow log's 10.11 name, the DDL recovery
			// log, the buffer pool dump, MySQL's keyring file, the MyISAM log,
			// the SQL error log plugin's file.
			if has && outside(val, o) {
				seen[name] = true
				extra = append(extra, "loose-"+strings.ReplaceAll(name, "_", "-")+"="+filepath.Join(o.RunDir, filepath.Base(val)))
			}
		case "aria_log_dir_path", "innodb_undo_directory":
			seen[name] = true
			extra = append(extra, "loose-"+strings.ReplaceAll(name, "_", "-")+"="+o.Datadir)
		case "innodb_tmpdir":
			seen[name] = true
			extra = append(extra, "loose-innodb-tmpdir="+o.Tmpdir)
		case "secure_file_priv":
			if has && val != "" && val != "NULL" {
				seen[name] = true
				extra = append(extra, "secure-file-priv="+filepath.Join(o.RunDir, "tmp"))
			}
		case "extra_port":
			// A second fixed port: not private, may collide with another server.
			if has && val != "0" {
				seen[name] = true
				extra = append(extra, "loose-extra-port=0")
			}
		}
	}
	return extra
}

// ownFiles returns override lines for the user's settings that locate the
// server's own files (plugin-dir, character-sets-dir, lc-messages-dir, the old
// language) outside the build under test: they point back into it (see
// Install.ownPath), so a my.cnf from /etc/mysql never makes the build load
// another version's plugins or messages. Only the user's file is looked at
// (set, nil for none): what the build itself passes is its business.
func ownFiles(ctx context.Context, set *OptionFileSet, in *Install) ([]string, error) {
	if set == nil {
		return nil, nil
	}
	var extra []string
	for _, key := range []string{"plugin_dir", "character_sets_dir", "lc_messages_dir", "language"} {
		st, ok := set.Last(key)
		if !ok || !st.HasValue || st.Value == "" || strings.HasPrefix(filepath.Clean(st.Value)+"/", in.Prefix+"/") {
			continue
		}
		own, err := in.ownPath(ctx, key)
		if err != nil {
			return nil, fmt.Errorf("%w %s: %s would make the build under test use files outside it, and %v (remove the setting)",
				ErrOptionFile, st.Where(), strings.TrimPrefix(st.Arg(), "--"), err)
		}
		if key == "language" {
			key = "lc_messages_dir" // the pre-5.5 spelling
		}
		extra = append(extra, "loose-"+strings.ReplaceAll(key, "_", "-")+"="+own)
	}
	return extra, nil
}

// outside reports whether a file path setting puts its file outside the run
// directory: an absolute path elsewhere, or a relative one (the server takes it
// against the datadir) that climbs out with "..".
func outside(val string, o Overrides) bool {
	if val == "" {
		return false
	}
	p := val
	if !filepath.IsAbs(p) {
		p = filepath.Join(o.Datadir, p)
	}
	return !strings.HasPrefix(filepath.Clean(p)+"/", o.RunDir+"/")
}

// privateNames are the options whose values perfbisect sets or relocates to
// keep a server's files, sockets and ports private (see Overrides.lines and
// privatePaths).
var privateNames = []string{"datadir", "socket", "port", "pid_file", "log_error", "tmpdir", "innodb_data_home_dir",
	"innodb_log_group_home_dir", "innodb_undo_directory", "innodb_tmpdir", "log_bin", "log_bin_index", "relay_log",
	"relay_log_index", "relay_log_info_file", "master_info_file", "general_log_file", "slow_query_log_file",
	"log_slow_query_file", "aria_log_dir_path", "secure_file_priv", "server_audit_file_path", "audit_log_file",
	"log_ddl_recovery", "innodb_buffer_pool_filename", "keyring_file_data", "log_isam", "sql_error_log_filename",
	"extra_port", "bind_address", "basedir", "plugin_dir", "character_sets_dir", "lc_messages_dir", "log_basename", "user"}

// CheckSettings refuses, with the file and line, the user's settings that no
// override can make private: a log-basename with a path, and an abbreviation
// of a file, port or directory option (the server accepts unique prefixes
// such as secure-file-pr; perfbisect matches full names only). Errors wrap
// ErrOptionFile.
func CheckSettings(set *OptionFileSet) error {
	// Real options whose names are prefixes of private ones.
	known := map[string]bool{"general_log": true, "slow_query_log": true, "log_slow_query": true, "lc_messages": true, "log": true,
		"log_slow": true, "server_audit": true, "innodb_buffer_pool": true}
	for _, n := range privateNames {
		known[n] = true
	}
	for _, s := range set.Settings {
		k := s.Key()
		if k == "log_basename" && strings.Contains(s.Value, "/") {
			return fmt.Errorf("%w %s: log-basename=%s has a path: logs would be written outside perfbisect's run directory (use a plain name)",
				ErrOptionFile, s.Where(), s.Value)
		}
		if known[k] || len(k) < 3 {
			continue
		}
		for _, n := range privateNames {
			if strings.HasPrefix(n, k) {
				return fmt.Errorf("%w %s: %s abbreviates %s, which perfbisect must keep private: write the full name",
					ErrOptionFile, s.Where(), s.Name, strings.ReplaceAll(n, "_", "-"))
			}
		}
	}
	return nil
}

// firstUserOnly returns args without every --user= after the first (mysqld
// runs as the first it reads).
func firstUserOnly(args []string) []string {
	var out []string
	seen := false
	for _, a := range args {
		if strings.HasPrefix(a, "--user=") {
			if seen {
				continue
			}
			seen = true
		}
		out = append(out, a)
	}
	return out
}

// currentUser is the account mysqld runs as: the invoking user (mysqld refuses to
// run as root unless told to with --user=root).
func currentUser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return strconv.Itoa(os.Getuid())
}

// EffectiveArgsFile, in a run directory, lists (secret values redacted:
// RedactOptions) the options the server read from
// the effective option file (one per line, from --print-defaults).
const EffectiveArgsFile = "my.cnf.args"

// effective is the option file a server is started with.
type effective struct {
	path       string         // the effective option file
	user       *OptionFileSet // the user's file as this server reads it; nil without one
	overridden []Override     // the user's settings the overrides replace
}

// writeOptionFile writes the effective option file of o into its run directory
// (see writeEffective), relocating every path the user's settings would put
// outside it, and records the options as the server reads them and the user's
// settings it overrides.
func writeOptionFile(ctx context.Context, o Options, ov *Overrides) (*effective, error) {
	text, err := inline(o.OptionFile)
	if err != nil {
		return nil, err
	}
	eff := &effective{path: filepath.Join(o.RunDir, EffectiveOptionFile)}
	if o.OptionFile != "" {
		if eff.user, err = ReadUserOptionFile(o.OptionFile, ServerGroups(o.Install)); err != nil {
			return nil, err
		}
		if err := CheckSettings(eff.user); err != nil {
			return nil, err
		}
	}
	if err := writeEffective(eff.path, o.OptionFile, text, *ov); err != nil {
		return nil, err
	}
	args, err := printDefaults(ctx, o.Install, eff.path, optionDir(o.OptionFile, o.RunDir))
	if err != nil {
		return nil, err
	}
	extra := privatePaths(args, *ov)
	own, err := ownFiles(ctx, eff.user, o.Install)
	if err != nil {
		return nil, err
	}
	extra = append(extra, own...)
	if len(extra) > 0 {
		ov.Extra = extra
		if err := writeEffective(eff.path, o.OptionFile, text, *ov); err != nil {
			return nil, err
		}
		if args, err = printDefaults(ctx, o.Install, eff.path, optionDir(o.OptionFile, o.RunDir)); err != nil {
			return nil, err
		}
	}
	// Recorded with secret values redacted: the run directory's my.cnf is the
	// only file that holds them (this list goes into the store and reports);
	// and as the server takes them: it keeps the first user= it reads, so a
	// later one (the user's user=mysql) is left out of the list.
	args = firstUserOnly(args)
	if err := os.WriteFile(filepath.Join(o.RunDir, EffectiveArgsFile), []byte(RedactOptions(strings.Join(args, "\n"))+"\n"), 0o600); err != nil {
		return nil, err
	}
	if eff.user != nil {
		eff.overridden = overridden(eff.user, ov.lines())
	}
	return eff, nil
}

// OptionFileDigest hashes an option file together with every file it pulls in
// through !include and !includedir, as readOptionFile reads them (relative
// paths against the file's own directory), and what the reader would skip (a
// missing include counts as missing): two equal digests mean the server reads
// the same text. It returns a hex string, or an error wrapping ErrOptionFile
// when the file cannot be read or has a syntax error.
func OptionFileDigest(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("%w %s: %v", ErrOptionFile, path, err)
	}
	set, err := ReadUserOptionFile(abs, nil)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	for _, f := range set.Files {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", fmt.Errorf("%w %s: %v", ErrOptionFile, f, err)
		}
		fmt.Fprintf(h, "%s\x00%d\x00", f, len(b))
		h.Write(b)
	}
	for _, w := range set.Warnings {
		fmt.Fprintf(h, "%s\x00", w)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
