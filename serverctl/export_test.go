package serverctl

// Args returns the settings as arguments (Setting.Arg), in reading order: the
// list `my_print_defaults --defaults-file=F GROUPS...` prints.
func (f *OptionFileSet) Args() []string {
	out := make([]string, len(f.Settings))
	for i, s := range f.Settings {
		out[i] = s.Arg()
	}
	return out
}

// ReadOptionFile reads the option file path with the rules of the server's own
// reader (mysys my_default.c, MariaDB 10.11; the golden tests compare it with
// my_print_defaults and `mariadbd --print-defaults` on the same files) and
// returns the settings of the given groups (case-insensitive; see ServerGroups):
//
//   - a line is trimmed; empty lines and lines starting with '#' or ';' are
//     comments; elsewhere '#' outside quotes starts a comment (in names too);
//   - "[group]" starts a group (leading blanks inside the brackets are part of
//     the name, trailing ones are not, text after ']' is ignored); an option
//     before any group, or a '[' without ']', is an error;
//   - "name", "name = value": blanks around name and value are trimmed, a value
//     wrapped in matching quotes loses them, and \n \t \r \b \s \" \' \\ are
//     escapes (any other backslash is kept);
//   - "!include FILE" and "!includedir DIR" (the .cnf files of DIR in byte
//     order) read other files, in any group and before any group, up to 10
//     levels deep; relative paths are resolved against baseDir (the server uses
//     its working directory; perfbisect passes the file's own directory and
//     rewrites the paths the same way in the effective file). A missing
//     !include is skipped (a warning here, silent in the server); a missing
//     !includedir, or either directive without a path, is an error;
//   - other lines starting with '!' are ignored (a warning).
//
// Errors wrap ErrOptionFile and name the file and line.
func ReadOptionFile(path string, groups []string, baseDir string) (*OptionFileSet, error) {
	return readOptionFile(path, groups, baseDir, false)
}

// Port is the loopback TCP port the server listens on.
func (s *Server) Port() int { return s.port }
