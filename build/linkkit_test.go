package build

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/perfbisect/perfbisect/internal/testenv"
)

// TestLinkKitTakesEveryInput: a server link that reads objects through a
// response file, an archive by a relative path, a library by -L (the build
// directory's absolute path) and -l, and a version script of the source
// tree inside a -Wl option, is kept whole: a layout links from the kit
// after the build directory and the source tree are gone, and after the
// entry moved (another state directory, the shared cache); the output and
// the build's own binary are not kept; a kit whose input is spoiled fails
// naming what the linker could not read.
func TestLinkKitTakesEveryInput(t *testing.T) {
	testenv.Require(t, testenv.BuildTools, testenv.LLD)
	root := t.TempDir()
	bdir, src := filepath.Join(root, "build"), filepath.Join(root, "src")
	sql := filepath.Join(bdir, "sql")
	write := func(p, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sh := func(dir, cmd string) {
		t.Helper()
		c := exec.Command("sh", "-c", cmd)
		c.Dir = dir
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", cmd, err, out)
		}
	}
	write(filepath.Join(src, "sql", "server.map"), "{ global: *; };\n")
	write(filepath.Join(sql, "main.c"), "#include <stdio.h>\nint f(void); int g(void);\nint main(void) { printf(\"Ver %d\\n\", f() + g()); return 0; }\n")
	write(filepath.Join(sql, "g.c"), "int g(void) { return 2; }\n")
	write(filepath.Join(bdir, "lib", "f.c"), "int f(void) { return 40; }\n")
	sh(sql, "mkdir -p CMakeFiles/mysqld.dir && cc -g -c main.c -o CMakeFiles/mysqld.dir/main.c.o && cc -g -c g.c && ar rcs libg.a g.o")
	sh(filepath.Join(bdir, "lib"), "cc -g -c f.c && ar rcs libf.a f.o")
	write(filepath.Join(sql, "CMakeFiles", "mysqld.dir", "objects1.rsp"), "CMakeFiles/mysqld.dir/main.c.o\n")
	line := "cc -g @CMakeFiles/mysqld.dir/objects1.rsp -o mysqld libg.a -L" + filepath.Join(bdir, "lib") + " -lf -Wl,--version-script=" + filepath.Join(src, "sql", "server.map")
	sh(sql, line)

	prefix := filepath.Join(root, "entry")
	if err := os.MkdirAll(filepath.Join(prefix, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	sh(root, "cp "+filepath.Join(sql, "mysqld")+" "+filepath.Join(prefix, "bin", "mysqld"))
	logf, err := os.Create(filepath.Join(root, "build.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	j := &job{prefix: prefix}
	j.commit, j.src, j.bdir, j.logf, j.logPath = "c0ffee", src, bdir, logf, logf.Name()
	l := link{dir: sql, target: "mysqld", line: line, server: "bin/mysqld"}
	b := &Builder{Layouts: LayoutPerRun, Log: io.Discard}
	if err := b.saveKit(context.Background(), j, l); err != nil {
		raw, _ := os.ReadFile(logf.Name())
		t.Fatalf("saveKit: %v\n%s", err, raw)
	}
	var kept []string
	_ = filepath.Walk(filepath.Join(prefix, kitDir), func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			rel, _ := filepath.Rel(filepath.Join(prefix, kitDir), p)
			kept = append(kept, rel)
		}
		return nil
	})
	want := []string{".src/sql/server.map", "kit.json", "lib/libf.a", "sql/CMakeFiles/mysqld.dir/main.c.o", "sql/CMakeFiles/mysqld.dir/objects1.rsp", "sql/libg.a"}
	if strings.Join(kept, " ") != strings.Join(want, " ") {
		t.Errorf("kit holds %v, want %v", kept, want)
	}
	raw, _ := os.ReadFile(filepath.Join(prefix, kitDir, kitFile))
	if strings.Contains(string(raw), root) {
		t.Errorf("kit.json names the build's own paths: %s", raw)
	}

	// The build directory and the checkout are gone; the entry moves.
	if err := os.RemoveAll(bdir); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(src); err != nil {
		t.Fatal(err)
	}
	moved := filepath.Join(root, "elsewhere")
	if err := os.Rename(prefix, moved); err != nil {
		t.Fatal(err)
	}
	var linked []string
	for _, seed := range []uint64{1, 2} {
		bin, err := LinkLayout(context.Background(), moved, seed, t.TempDir(), io.Discard)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		out, err := exec.Command(bin, "--version").CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "Ver 42" {
			t.Errorf("seed %d: %s: %v %q", seed, bin, err, out)
		}
		raw, _ := os.ReadFile(bin)
		linked = append(linked, string(raw))
	}
	if linked[0] == linked[1] {
		t.Errorf("seeds 1 and 2 linked the same binary")
	}

	// A spoiled input: the error names what the linker could not take.
	if err := os.WriteFile(filepath.Join(moved, kitDir, "lib", "libf.a"), []byte("spoiled"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LinkLayout(context.Background(), moved, 3, t.TempDir(), io.Discard); err == nil || !strings.Contains(err.Error(), "libf.a") || !strings.Contains(err.Error(), "seed 3") {
		t.Errorf("a spoiled archive: %v, want the link's failure naming libf.a and the seed", err)
	}
}
