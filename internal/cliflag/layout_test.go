package cliflag

import "testing"

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"oltp_read_only": "oltp_read_only",
		"/a/b.cnf":       "/a/b.cnf",
		"5%":             "5%",
		"":               "''",
		"a b":            "'a b'",
		"--x=1 --y=2":    "'--x=1 --y=2'",
		"it's":           `'it'\''s'`,
		"$HOME":          "'$HOME'",
	} {
		if got := ShellQuote(in); got != want {
			t.Errorf("ShellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}
