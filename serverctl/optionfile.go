package serverctl

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
)

// ErrOptionFile is wrapped by errors about the user's option file (missing,
// unreadable, a directory).
var ErrOptionFile = errors.New("option file")

// Overrides are the settings the tool forces on every server it starts, in the
// order they are written. They come after the user's option file in the effective
// file, so they win (MySQL's rule: the last setting read wins).
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
}

// lines renders the overrides as option-file lines for the [mysqld] group.
func (o Overrides) lines() []string {
	return []string{
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
	}
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
	if st.IsDir() {
		return fmt.Errorf("%w %s: is a directory (pass a my.cnf file with --my-cnf)", ErrOptionFile, path)
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("%w %s: %v", ErrOptionFile, path, err)
	}
	return f.Close()
}

// WriteEffective writes the option file the server gets to dst: the user's file
// (absolute path, pulled in with !include so that its groups, includes and loose-
// prefixes are read by the server's own parser) followed by the tool's overrides
// in [mysqld], which therefore win. userFile may be "".
func WriteEffective(dst, userFile string, o Overrides) error {
	var b strings.Builder
	b.WriteString("# Effective option file written by perfbisect.\n")
	if userFile != "" {
		abs, err := filepath.Abs(userFile)
		if err != nil {
			return fmt.Errorf("%w %s: %v", ErrOptionFile, userFile, err)
		}
		fmt.Fprintf(&b, "# The user's option file, read by the server's own parser:\n!include %s\n\n", abs)
	}
	b.WriteString("# perfbisect's overrides (private run directory, loopback only):\n[mysqld]\n")
	for _, l := range o.lines() {
		b.WriteString(l + "\n")
	}
	return os.WriteFile(dst, []byte(b.String()), 0o644)
}

// currentUser is the account mysqld runs as: the invoking user (mysqld refuses to
// run as root unless told to with --user=root).
func currentUser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return strconv.Itoa(os.Getuid())
}
