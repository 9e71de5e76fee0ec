package serverctl

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/perfbisect/perfbisect/internal/testenv"
)

// myPrintDefaults runs MariaDB's my_print_defaults on file for groups, in dir (the
// directory relative includes are resolved against), and returns the printed
// arguments, or ok=false when it refused the file.
func myPrintDefaults(t *testing.T, file, dir string, groups []string) (args []string, stderrText string, ok bool) {
	t.Helper()
	p, err := exec.LookPath("my_print_defaults")
	if err != nil {
		t.Fatalf("my_print_defaults not installed (apt-get install mariadb-server): %v", err)
	}
	var out, stderr bytes.Buffer
	// --defaults-file must come first. (10.11 prints passwords as written; later
	// versions mask them without --show.)
	cmd := exec.Command(p, append([]string{"--defaults-file=" + file}, groups...)...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, &out, &stderr
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatal(err)
		}
		return nil, stderr.String(), false
	}
	s := strings.TrimSuffix(out.String(), "\n")
	if s == "" {
		return nil, stderr.String(), true
	}
	return strings.Split(s, "\n"), stderr.String(), true
}

// checkGolden compares ReadOptionFile with my_print_defaults on one file.
func checkGolden(t *testing.T, name, file string, groups []string) {
	t.Helper()
	dir := filepath.Dir(file)
	want, stderr, ok := myPrintDefaults(t, file, dir, groups)
	got, err := ReadOptionFile(file, groups, dir)
	if !ok {
		if err == nil {
			text, _ := os.ReadFile(file)
			t.Errorf("%s: my_print_defaults refuses the file (%s), ReadOptionFile read %q\n%q", name, stderr, got.Args(), text)
		} else if !errors.Is(err, ErrOptionFile) || !strings.Contains(err.Error(), ":") {
			t.Errorf("%s: error does not wrap ErrOptionFile with a place: %v", name, err)
		}
		return
	}
	if err != nil {
		text, _ := os.ReadFile(file)
		t.Errorf("%s: my_print_defaults reads the file, ReadOptionFile: %v\n%s", name, err, text)
		return
	}
	if strings.Join(got.Args(), "\n") != strings.Join(want, "\n") {
		text, _ := os.ReadFile(file)
		t.Errorf("%s:\n got  %q\n want %q\nfile:\n%s", name, got.Args(), want, text)
	}
}

// TestReadOptionFileGolden checks the parser against my_print_defaults on files
// that exercise each rule.
func TestReadOptionFileGolden(t *testing.T) {
	testenv.Require(t, testenv.Server)
	dir := t.TempDir()
	write := func(rel, text string) string {
		p := filepath.Join(dir, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("conf.d/b.cnf", "[mysqld]\nb_inc=2\n")
	write("conf.d/a.cnf", "[mysqld]\na_inc=1\n!include ../deep.cnf\n")
	write("conf.d/B.cnf", "[mysqld]\nupper_b=1\n")
	write("conf.d/c.conf", "[mysqld]\nnot_cnf=1\n")
	write("conf.d/z.ini", "[mysqld]\nini=1\n")
	os.MkdirAll(filepath.Join(dir, "conf.d", "dir.cnf"), 0o755)
	write("deep.cnf", "[client]\nclient_only=1\n[mysqld]\ndeep=1\n")
	write("nogroup.cnf", "orphan=1\n[mysqld]\nx=1\n")
	write("broken.d/a.cnf", "[mysqld]\nok=1\n[bad\nz=1\n")
	write("broken.d/b.cnf", "[mysqld]\nb=1\n!includedir missing.d\nnot_read=1\n")
	write("broken.d/c.cnf", "[mysqld]\nc=1\n")
	write("loop.cnf", "[mysqld]\nloop=1\n!include loop.cnf\n")
	groups := []string{"mysqld", "server", "mysqld-10.11", "mariadb", "mariadb-10.11"}
	cases := map[string]string{
		"comments": "# c\n; c\n[mysqld]  # after the header\n key1 = value with spaces   \nkey2=\"quoted # not a comment\"\nkey3='single'  # c\nkey4=val#c\nkey#5=1\n  ;e=1\na=1;x\nb = #x\n",
		"quotes":   "[mysqld]\nq1 = \"unbalanced\nq2=\"x\"y\"\nq3='it''s'\nq4=\"a\" b\nq5 = \"\nq6 = 'x\\'y'\nq7 = \"x\\\"y # z\" # c\nq8=\"x'\n",
		"escapes":  "[mysqld]\ne1=a\\tb\\\\c\\sd\\qe\ne2=x\\\ne3=x\\\\\ne4=\\\"x\\\"\n",
		"names":    "[mysqld]\nkey7\n  key8 = 8\nkey-9=9\nloose-foo = bar\nkey a = 1\n=novalue\nkey11 = =x\nkey12 =\nA=1\n\xc3\xa9=1\na\t=\t1\t\n",
		"groups":   "[MYSQLD]\nupper=1\n[client]\ncl=1\n[mysqld-10.11]\nver=1\n[mysqld-10.6]\nold=1\n[ mysqld]\nlead=1\n[mysqld ]\ntrail=1\n[mysqld]x\nafter=1\n[mys#qld]\nhash=1\n[]\nempty=1\n[mariadb]\nm=1\n",
		"includes": "[client]\n!include deep.cnf\nc=1\n[mysqld]\n  !include   deep.cnf   \n!includedir conf.d\n!include missing.cnf\n!includex deep.cnf\n!foo\n!include\tdeep.cnf\n!include deep.cnf # c\nlast=1",
		"crlf":     "[mysqld]\r\na=1\r\nb = \"x\" \r\n",
		"loop":     "[mysqld]\n!include loop.cnf\n",
		// The reader drops a directive's last character, the newline it
		// expects: without one, deep.cnf becomes deep.cn (missing, skipped).
		"no-newline": "[mysqld]\na=1\n!include deep.cnf",
		// errors
		"orphan":         "orphan=1\n[mysqld]\n",
		"no-bracket":     "[mysqld\na=1\n",
		"include-empty":  "[mysqld]\n!include\n",
		"includedir-bad": "[mysqld]\n!includedir missing.d\n",
		"includedir-cmt": "[mysqld]\n!includedir conf.d # c\n",
		// An error in an included file ends that file only.
		"include-orphan":  "[mysqld]\nbefore=1\n!include nogroup.cnf\n!includedir broken.d\nafter=1\n",
		"includedir-0":    "[mysqld]\n!includedir\n",
		"includedir-nonl": "[mysqld]\n!includedir d",
	}
	for name, text := range cases {
		checkGolden(t, name, write(name+".cnf", text), groups)
	}
	// The error names the line.
	_, err := ReadOptionFile(filepath.Join(dir, "orphan.cnf"), groups, dir)
	if err == nil || !strings.Contains(err.Error(), "orphan.cnf:1:") || !strings.Contains(err.Error(), "orphan=1") {
		t.Errorf("orphan option: %v", err)
	}
	// Escapes that print as line breaks are checked by hand.
	set, err := ReadOptionFile(write("nl.cnf", "[mysqld]\nv=a\\nb\\rc\n"), groups, dir)
	if err != nil || len(set.Settings) != 1 || set.Settings[0].Value != "a\nb\rc" {
		t.Errorf("\\n escapes: %+v %v", set, err)
	}
	// Warnings tell what the server skips silently.
	set, _ = ReadOptionFile(filepath.Join(dir, "includes.cnf"), groups, dir)
	if w := strings.Join(set.Warnings, "\n"); !strings.Contains(w, "missing.cnf") || !strings.Contains(w, "!includex") {
		t.Errorf("warnings: %q", set.Warnings)
	}
	if s, ok := set.Last("last"); !ok || s.Line != 12 || s.File != filepath.Join(dir, "includes.cnf") {
		t.Errorf("Last: %+v", s)
	}
}

// TestReadOptionFileRandom compares the parser with my_print_defaults on
// random files built from the pieces the rules treat differently.
func TestReadOptionFileRandom(t *testing.T) {
	testenv.Require(t, testenv.Server)
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "d"), 0o755)
	rng := rand.New(rand.NewSource(42))
	pick := func(s ...string) string { return s[rng.Intn(len(s))] }
	groups := []string{"mysqld", "server", "mariadb"}
	line := func(include bool) string {
		ws := func() string { return pick("", "", " ", "\t", "  ") }
		switch k := rng.Intn(20); {
		case k < 3:
			return ws() + "[" + pick("mysqld", "MySQLd", "client", "server", " mysqld", "mysqld ", "mariadb", "mys#qld", "") + "]" + pick("", "", " # c", "x")
		case k < 4:
			return ws() + pick("#", ";") + " comment = 1"
		case k < 5:
			return ws()
		case k < 7 && include:
			return ws() + pick("!include", "!includedir", "!includex", "!inc") + pick(" ", "\t", "  ") + pick("inc1.cnf", "inc2.cnf", "missing.cnf", "d", "d # c") + ws()
		default:
			name := pick("a", "b_c", "b-c", "loose-x", "skip-name-resolve", "n m", "k#", "A", "")
			if rng.Intn(5) == 0 {
				return ws() + name + ws()
			}
			val := ""
			for i := rng.Intn(4); i > 0; i-- {
				val += pick("v", "1", " ", "\"", "'", "#", ";", "\\t", "\\\\", "\\s", "\\q", "\\\"", "\\", "=", "x y")
			}
			if name == "" {
				// my_default.c trims an empty name's end back into the
				// blanks before it and prints garbage: a reader bug not
				// modelled.
				return "=" + ws() + val + ws()
			}
			return ws() + name + ws() + "=" + ws() + val + ws()
		}
	}
	file := func(n int, include bool, first string) string {
		lines := []string{first}
		for i := 0; i < n; i++ {
			lines = append(lines, line(include))
		}
		eol := pick("\n", "\n", "\r\n")
		return strings.Join(lines, eol) + pick(eol, "")
	}
	for i := 0; i < 150; i++ {
		// Include targets rarely break (a leading group); the main file may.
		os.WriteFile(filepath.Join(dir, "inc1.cnf"), []byte(file(4, false, "[mysqld]")), 0o644)
		os.WriteFile(filepath.Join(dir, "d", "x.cnf"), []byte(file(3, false, "[server]")), 0o644)
		os.WriteFile(filepath.Join(dir, "inc2.cnf"), []byte(file(3, true, "[client]")), 0o644)
		main := filepath.Join(dir, "main.cnf")
		os.WriteFile(main, []byte(file(12, true, pick("[mysqld]", "[mysqld]", "a=1", ""))), 0o644)
		checkGolden(t, fmt.Sprintf("random file %d", i), main, groups)
		if t.Failed() {
			return
		}
	}
}

// TestReadOptionFileServer compares the parser, with ServerGroups, against the
// server's own --print-defaults: the groups are the ones mariadbd reads.
func TestReadOptionFileServer(t *testing.T) {
	testenv.Require(t, testenv.Server)
	in := systemInstall(t)
	dir := t.TempDir()
	var b strings.Builder
	for _, g := range []string{"mysqld", "server", "mysqld-10.11", "mysqld-10.6", "mariadb", "mariadb-10.11", "mariadbd", "mariadbd-10.11",
		"client-server", "galera", "client", "mysql", "mysqld_safe", "mariadb-10.6", "embedded"} {
		fmt.Fprintf(&b, "[%s]\nin_%s=1\n", g, strings.NewReplacer("-", "_", ".", "_").Replace(g))
	}
	cnf := filepath.Join(dir, "groups.cnf")
	os.WriteFile(cnf, []byte(b.String()), 0o644)
	out, err := exec.Command(in.Server, "--defaults-file="+cnf, "--print-defaults").CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	set, err := ReadOptionFile(cnf, ServerGroups(in), dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(set.Args(), " "), strings.Join(parsePrintDefaults(string(out)), " "); got != want {
		t.Errorf("groups %v:\n got  %s\n want %s", ServerGroups(in), got, want)
	}
	// Debian's own configuration, as the system server reads it.
	if _, err := os.Stat("/etc/mysql/my.cnf"); err == nil {
		checkGolden(t, "/etc/mysql/my.cnf", "/etc/mysql/my.cnf", ServerGroups(in))
	}
}

// TestServerGroupsByVersion checks the version rules for the servers that are
// not installed here.
func TestServerGroupsByVersion(t *testing.T) {
	for line, want := range map[string]string{
		"mysqld  Ver 8.0.36 for Linux on x86_64 (MySQL Community Server - GPL)":     "mysqld server mysqld-8.0",
		"mysqld  Ver 5.7.44-48 for Linux on x86_64 (Percona Server (GPL), Release)": "mysqld server mysqld-5.7",
		"mysqld  Ver 10.0.22-MariaDB for Linux on x86_64 (Source distribution)":     "mysqld server mysqld-10.0 mariadb client-server mariadb-10.0",
		"mysqld  Ver 10.3.39-MariaDB for Linux on x86_64 (MariaDB Server)":          "mysqld server mysqld-10.3 mariadb client-server mariadb-10.3 galera",
		"mariadbd  Ver 11.4.2-MariaDB for Linux on x86_64 (MariaDB Server)":         "mysqld server mysqld-11.4 mariadb client-server mariadb-11.4 galera mariadbd mariadbd-11.4",
	} {
		in := &Install{}
		if err := in.parseVersion(line); err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(ServerGroups(in), " "); got != want {
			t.Errorf("%s:\n got  %s\n want %s", line, got, want)
		}
	}
}

// TestReadUserOptionFile reads a file whose last line is an !include without a
// newline as the server gets it from perfbisect (inlined, so the newline is
// there), unlike the server reading the raw file.
func TestReadUserOptionFile(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "inc.cnf"), []byte("[mysqld]\nskip-networking\n"), 0o644)
	cnf := filepath.Join(dir, "my.cnf")
	os.WriteFile(cnf, []byte("[mysqld]\nmax_connections=50\n!include inc.cnf"), 0o644)
	raw, err := ReadOptionFile(cnf, []string{"mysqld"}, dir)
	if err != nil || len(raw.Settings) != 1 {
		t.Fatalf("raw: %+v %v", raw, err)
	}
	set, err := ReadUserOptionFile(cnf, []string{"mysqld"})
	if err != nil || len(set.Settings) != 2 || set.Settings[1].Name != "skip-networking" || len(set.Warnings) != 0 {
		t.Errorf("inlined: %+v %v", set, err)
	}
}

// TestCheckSettings refuses what cannot be made private, with its line.
func TestCheckSettings(t *testing.T) {
	dir := t.TempDir()
	for text, want := range map[string]string{
		"[mysqld]\ngeneral_log\nslow_query_log=1\nlc_messages=en_US\nlog_bin\nsecure-file-priv=/x\n": "",
		"[mysqld]\nsecure-file-pr=/tmp/x\n":     "my.cnf:2: secure-file-pr abbreviates secure-file-priv",
		"[mysqld]\nlog-bin-inde=/tmp/x.index\n": "my.cnf:2: log-bin-inde abbreviates log-bin-index",
		"[mysqld]\n\nlog-basename=/var/log/x\n": "my.cnf:3: log-basename=/var/log/x has a path",
	} {
		cnf := filepath.Join(dir, "my.cnf")
		os.WriteFile(cnf, []byte(text), 0o644)
		set, err := ReadUserOptionFile(cnf, []string{"mysqld"})
		if err != nil {
			t.Fatal(err)
		}
		err = CheckSettings(set)
		switch {
		case want == "" && err != nil:
			t.Errorf("%q: %v", text, err)
		case want != "" && (!errors.Is(err, ErrOptionFile) || !strings.Contains(err.Error(), want)):
			t.Errorf("%q: %v, want %q", text, err, want)
		}
	}
}
