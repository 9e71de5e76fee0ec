package serverctl

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzReadUserOptionFile feeds the option-file reader arbitrary bytes (binary
// garbage, unbalanced quotes and brackets, includes of itself): it must never
// panic or loop, and a file it refuses must be refused with an error that
// wraps ErrOptionFile and names the file, as the user's typo would be.
func FuzzReadUserOptionFile(f *testing.F) {
	for _, s := range []string{
		"[mysqld]\ninnodb_buffer_pool_size=128M\n",
		"[mysqld]\nkey = \"a # b\" # comment\n[client]\nport=3306",
		"innodb_log_file_size=48M\n",
		"[mysqld\nx=1\n",
		"[mariadb]\n!include self.cnf\n",
		"[mysqld]\n!includedir .\n!include\n",
		"\x00\xff[mysqld]\x00=\x00\n",
		"[mysqld]\nsecure-file-priv='/tmp\\'\nlog-basename=\\\\\n",
		"[ mysqld ]  trailing\n;c\n#c\n  \n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, "self.cnf")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		set, err := ReadUserOptionFile(path, []string{"mysqld", "server", "mariadb"})
		if err != nil {
			if !errors.Is(err, ErrOptionFile) || !strings.Contains(err.Error(), "self.cnf") {
				t.Fatalf("refused with %q: want an ErrOptionFile naming self.cnf", err)
			}
			return
		}
		for _, s := range set.Settings {
			if s.Line < 1 || s.File == "" {
				t.Fatalf("setting %+v has no place in a file", s)
			}
		}
	})
}
