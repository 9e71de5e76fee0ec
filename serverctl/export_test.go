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

// ReadOptionFile is readOptionFile of a file that is not inlined (the
// golden tests compare it with my_print_defaults on the same files).
func ReadOptionFile(path string, groups []string, baseDir string) (*OptionFileSet, error) {
	return readOptionFile(path, groups, baseDir, false)
}

// Port is the loopback TCP port the server listens on.
func (s *Server) Port() int { return s.port }
