// Command architecture prints the package table of docs/architecture.md
// (internal/archmap): each package, its non-test lines to the nearest
// hundred, and its package comment's first sentence. With -w it rewrites the
// table in docs/architecture.md instead. Run it from the module's root.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/perfbisect/perfbisect/internal/archmap"
)

func main() {
	write := flag.Bool("w", false, "rewrite the table in docs/architecture.md")
	flag.Parse()
	table, err := archmap.Table(".")
	if err != nil {
		fmt.Fprintf(os.Stderr, "architecture: %v (run it from the module's root)\n", err)
		os.Exit(1)
	}
	if !*write {
		fmt.Print(table)
		return
	}
	path := filepath.Join("docs", "architecture.md")
	doc, err := os.ReadFile(path)
	if err == nil {
		var out string
		if out, err = archmap.Replace(string(doc), table); err == nil {
			err = os.WriteFile(path, []byte(out), 0o644)
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "architecture: %v\n", err)
		os.Exit(1)
	}
}
