package serverctl

import (
	"fmt"
	"path/filepath"
)

// OptionFile is a user's option file read once: where it is, the digest of
// the text the server reads from it (OptionFileDigest: the file and every
// file it includes), and what reading it found (the files read, what a
// server would skip). The settings a server reads depend on its groups:
// Groups. The zero value is "no option file".
type OptionFile struct {
	Path     string   // absolute; "" for none
	Digest   string   // hex SHA-256 (OptionFileDigest)
	Files    []string // the file and every file it includes, in reading order
	Warnings []string // what the server would skip silently
}

// LoadOptionFile checks and reads the option file at path ("" gives the
// zero OptionFile). Errors wrap ErrOptionFile and name the file: missing,
// not a regular file, unreadable, or a syntax error with its line.
func LoadOptionFile(path string) (OptionFile, error) {
	if path == "" {
		return OptionFile{}, nil
	}
	if err := CheckOptionFile(path); err != nil {
		return OptionFile{}, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return OptionFile{}, fmt.Errorf("%w %s: %v", ErrOptionFile, path, err)
	}
	set, err := ReadUserOptionFile(abs, nil)
	if err != nil {
		return OptionFile{}, err
	}
	d, err := OptionFileDigest(abs)
	if err != nil {
		return OptionFile{}, err
	}
	return OptionFile{Path: abs, Digest: d, Files: set.Files, Warnings: set.Warnings}, nil
}

// IsZero reports whether f is "no option file".
func (f OptionFile) IsZero() bool { return f.Path == "" }

// ShortDigest is the first 16 hex digits of Digest ("" for none): the
// option file's content in a session's identity.
func (f OptionFile) ShortDigest() string { return f.Digest[:min(16, len(f.Digest))] }

// String is the file's path, or "no option file".
func (f OptionFile) String() string {
	if f.Path == "" {
		return "no option file"
	}
	return f.Path
}

// Groups reads the file's settings of groups (ServerGroups, GroupsFor) as
// a server reading those groups does.
func (f OptionFile) Groups(groups []string) (*OptionFileSet, error) {
	return ReadUserOptionFile(f.Path, groups)
}
