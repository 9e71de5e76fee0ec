// Package archmap prints the package table of docs/architecture.md from the
// code itself: each package's import path under the module, its non-test Go
// lines (to the nearest hundred, so that the table changes with the code's
// shape, not with every commit) and the first sentence of its package
// comment. The table in the document sits between Begin and End; a test
// holds it to what Table prints.
package archmap

import (
	"bytes"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode"
)

// Begin and End are the lines around the generated table in the document.
const (
	Begin = "<!-- package table: go run ./scripts/architecture -w -->"
	End   = "<!-- end of the package table -->"
)

// Package is one row of the table.
type Package struct {
	Path  string // relative to the module root, "/"-separated
	Lines int    // non-test Go lines
	Doc   string // the package comment's first sentence
}

// Packages lists the packages under root (a module's root), scripts/ and
// testdata left out, sorted by path. Errors: a Go file that does not parse.
func Packages(root string) ([]Package, error) {
	byDir := map[string]*Package{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || rel == "scripts" || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, src, parser.ParseComments|parser.PackageClauseOnly)
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(filepath.Dir(rel))
		pkg := byDir[dir]
		if pkg == nil {
			pkg = &Package{Path: dir}
			byDir[dir] = pkg
		}
		pkg.Lines += bytes.Count(src, []byte("\n"))
		if f.Doc != nil && pkg.Doc == "" {
			pkg.Doc = firstSentence(f.Doc.Text())
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var out []Package
	for _, p := range byDir {
		out = append(out, *p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// firstSentence is text's first sentence, on one line, without the
// "Package x is" or "Command x" it begins with.
func firstSentence(text string) string {
	text = strings.Join(strings.Fields(text), " ")
	for i := 0; i+2 < len(text); i++ {
		abbrev := strings.HasSuffix(text[:i], "e.g") || strings.HasSuffix(text[:i], "i.e")
		if text[i] == '.' && text[i+1] == ' ' && unicode.IsLetter(rune(text[i+2])) && !abbrev {
			text = text[:i+1]
			break
		}
	}
	for _, w := range []string{"Package ", "Command "} {
		if strings.HasPrefix(text, w) {
			if _, rest, ok := strings.Cut(text[len(w):], " "); ok {
				text = rest
			}
		}
	}
	return text
}

// Table is the markdown table of the packages under root.
func Table(root string) (string, error) {
	pkgs, err := Packages(root)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("| package | lines | what it is (its package comment) |\n|---|---:|---|\n")
	for _, p := range pkgs {
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", p.Path, hundreds(p.Lines), strings.ReplaceAll(p.Doc, "|", `\|`))
	}
	return b.String(), nil
}

// hundreds is n to the nearest hundred, with a thousands separator ("~1,500";
// "<100" under 50).
func hundreds(n int) string {
	r := (n + 50) / 100 * 100
	if r == 0 {
		return "<100"
	}
	if r >= 1000 {
		return fmt.Sprintf("~%d,%03d", r/1000, r%1000)
	}
	return fmt.Sprintf("~%d", r)
}

// Replace returns doc with the text between its Begin and End lines replaced
// by table. Errors: the markers are missing or out of order.
func Replace(doc, table string) (string, error) {
	i := strings.Index(doc, Begin+"\n")
	j := strings.Index(doc, End)
	if i < 0 || j < i {
		return "", fmt.Errorf("the document has no %q ... %q block", Begin, End)
	}
	return doc[:i+len(Begin)+1] + table + doc[j:], nil
}
