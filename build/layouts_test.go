package build

import (
	"strings"
	"testing"
)

func TestRelinkCommand(t *testing.T) {
	for _, c := range []struct {
		name, linkTxt, target string
		want, not             []string
	}{
		{"the fixture's: -o at the end", "/usr/bin/cc -O2 -g CMakeFiles/mariadbd.dir/a.c.o -o mariadbd \n", "mariadbd",
			[]string{"-o '/e/1/bin/mariadbd' ", "-fuse-ld=lld '-Wl,--shuffle-sections=.text*=3' -Wl,--strip-debug", "a.c.o"}, []string{"-o mariadbd"}},
		{"MySQL 8's output directory, and the build tree's run path", "/usr/bin/c++ -O2 x.o -o ../runtime_output_directory/mysqld  -Wl,-rpath,/b/library_output_directory: -Wl,-rpath-link,/b/lib -lz",
			"mysqld", []string{"-o '/e/1/bin/mariadbd' ", "-Wl,-rpath-link,/b/lib", " -lz '-Wl,--enable-new-dtags,-rpath,/e/lib'"}, []string{"runtime_output_directory/mysqld", "-Wl,-rpath,/b"}},
		{"several commands: only the link runs again", "cmake -E echo pre\n/usr/bin/c++ x.o -o mysqld\nobjcopy --only-keep-debug mysqld mysqld.debug", "mysqld",
			[]string{"x.o -o '/e/1/bin/mariadbd'"}, []string{"cmake -E echo", "objcopy"}},
		{"a target named like the server's prefix is not the server", "/usr/bin/cc x.o -o mysqld_safe_helper", "mysqld", nil, nil},
	} {
		rpath := ""
		if strings.Contains(c.linkTxt, "rpath") {
			rpath = " '-Wl,--enable-new-dtags,-rpath,/e/lib'"
		}
		got, err := relinkCommand(c.linkTxt, c.target, "/e/1/bin/mariadbd", rpath, 3)
		if c.want == nil {
			if err == nil {
				t.Errorf("%s: %q, want an error", c.name, got)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %q lacks %q", c.name, got, w)
			}
		}
		for _, n := range c.not {
			if strings.Contains(got, n) {
				t.Errorf("%s: %q has %q", c.name, got, n)
			}
		}
	}
}
