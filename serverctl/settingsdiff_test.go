package serverctl

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/perfbisect/perfbisect/internal/testenv"
)

func readCnf(t *testing.T, text string) *OptionFileSet {
	t.Helper()
	p := filepath.Join(t.TempDir(), "my.cnf")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	set, err := ReadUserOptionFile(p, []string{"mysqld", "mariadb"})
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// TestDiffAndApplySettings: the variables whose winning settings differ
// (spelling of names aside), applied in part to the good file's settings,
// written and read back as the server reads them.
func TestDiffAndApplySettings(t *testing.T) {
	good := readCnf(t, "[mysqld]\ninnodb-buffer-pool-size=256M\nmax_connections=100\nquery_cache_size=1M\n[client]\nport=1\n")
	bad := readCnf(t, "[mariadb]\ninnodb_buffer_pool_size=6M\nmax-connections = 100\nskip-name-resolve\ninit_connect=\"SET @a = 'x y'\"\n")
	changes := DiffSettings(good, bad)
	var got []string
	for _, c := range changes {
		got = append(got, c.String())
	}
	want := "+init_connect=SET @a = 'x y'; innodb-buffer-pool-size=256M -> innodb_buffer_pool_size=6M; +skip-name-resolve; -query_cache_size=1M" // by variable
	if strings.Join(got, "; ") != want {
		t.Errorf("changes:\n %s\nwant\n %s", strings.Join(got, "; "), want)
	}
	// The buffer pool and the init string changed, the query cache dropped.
	var some []SettingChange
	for _, c := range changes {
		if c.Key != "name_resolve" {
			some = append(some, c)
		}
	}
	p := filepath.Join(t.TempDir(), "combined.cnf")
	if err := WriteSettings(p, ApplyChanges(good, some)); err != nil {
		t.Fatal(err)
	}
	back, err := ReadUserOptionFile(p, []string{"mysqld"})
	if err != nil {
		t.Fatal(err)
	}
	var args []string
	for _, s := range back.Settings {
		args = append(args, s.Arg())
	}
	if strings.Join(args, " ") != "--innodb_buffer_pool_size=6M --max_connections=100 --init_connect=SET @a = 'x y'" {
		t.Errorf("combined file reads back as %q", strings.Join(args, " "))
	}
	if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("combined file mode: %v %v", fi.Mode(), err)
	}
	if d := DiffSettings(back, readCnf(t, "[mysqld]\ninnodb_buffer_pool_size=6M\nmax_connections=100\ninit_connect=\"SET @a = 'x y'\"\n")); len(d) != 0 {
		t.Errorf("the combined file differs from what it should hold: %v", d)
	}
}

// installedServer is the system's installed server, and a context for
// asking it that ends with the test or after a minute.
func installedServer(t *testing.T) (context.Context, *Install) {
	t.Helper()
	testenv.Require(t, testenv.Server)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	in, err := FindInstall(ctx, "/usr")
	if err != nil {
		t.Fatal(err)
	}
	return ctx, in
}

// TestAccepts asks the real server about a setting it knows, one it does
// not, and a loose- one it does not (which it would skip).
func TestAccepts(t *testing.T) {
	ctx, in := installedServer(t)
	if err := in.Accepts(ctx, Setting{Name: "innodb_buffer_pool_size", Value: "64M", HasValue: true}); err != nil {
		t.Errorf("innodb_buffer_pool_size: %v", err)
	}
	for _, s := range []Setting{{Name: "innodb_mtflush_threads", Value: "4", HasValue: true}, {Name: "loose-no-such-thing", Value: "1", HasValue: true}} {
		if err := in.Accepts(ctx, s); !errors.Is(err, ErrUnknownSetting) || !strings.Contains(err.Error(), strings.TrimPrefix(s.Name, "loose-")) {
			t.Errorf("%s: %v, want ErrUnknownSetting naming it", s.Name, err)
		}
	}
}

// TestAcceptsFile asks the real server about a whole option file as it
// reads it: one it takes (a loose- setting it does not know is skipped,
// as at its start), and one with a setting it does not know, named with
// where it is set.
func TestAcceptsFile(t *testing.T) {
	ctx, in := installedServer(t)
	dir := t.TempDir()
	load := func(name, text string) OptionFile {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := LoadOptionFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	good := load("good.cnf", "[mysqld]\ninnodb_buffer_pool_size=64M\nloose-innodb_mtflush_threads=4\nLOOSE_innodb_no_such_setting=2\n")
	if err := in.AcceptsFile(ctx, good); err != nil {
		t.Errorf("good.cnf: %v", err)
	}
	bad := load("bad.cnf", "[client]\nuser=root\n[mysqld]\ninnodb_buffer_pool_size=64M\ninnodb_mtflush_threads=4\n")
	if err := in.AcceptsFile(ctx, bad); !errors.Is(err, ErrUnknownSetting) || !strings.Contains(err.Error(), "innodb_mtflush_threads") ||
		!strings.Contains(err.Error(), "bad.cnf:5") {
		t.Errorf("bad.cnf: %v, want ErrUnknownSetting naming innodb_mtflush_threads at bad.cnf:5", err)
	}
	// A relative !include is read from the file's directory, wherever
	// perfbisect runs.
	load("extra.cnf", "[mysqld]\ninnodb_mtflush_threads=4\n")
	includes := load("includes.cnf", "[mysqld]\ninnodb_buffer_pool_size=64M\n!include extra.cnf\n")
	if err := in.AcceptsFile(ctx, includes); !errors.Is(err, ErrUnknownSetting) || !strings.Contains(err.Error(), "innodb_mtflush_threads") {
		t.Errorf("includes.cnf: %v, want ErrUnknownSetting for the included file's setting", err)
	}
}
