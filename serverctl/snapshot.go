package serverctl

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// DatadirMark is the file Initialize puts into every datadir it creates (and
// CopyDatadir copies along): RemoveDatadir deletes only datadirs that hold it.
const DatadirMark = "perfbisect-datadir"

// ErrNotOurDatadir is returned (wrapped) by RemoveDatadir and CopyDatadir for a
// directory perfbisect did not create.
var ErrNotOurDatadir = errors.New("not a datadir perfbisect created")

func markDatadir(dd string) error {
	return os.WriteFile(filepath.Join(dd, DatadirMark), []byte("created by perfbisect; it deletes only datadirs marked so\n"), 0o600)
}

func isOurDatadir(dd string) bool {
	st, err := os.Lstat(filepath.Join(dd, DatadirMark))
	return err == nil && st.Mode().IsRegular()
}

// RemoveDatadir deletes a datadir perfbisect created (one holding DatadirMark).
// A missing directory is not an error; any other directory is refused with an
// error wrapping ErrNotOurDatadir and left as it is.
func RemoveDatadir(dd string) error {
	if _, err := os.Lstat(dd); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if !isOurDatadir(dd) {
		return fmt.Errorf("remove datadir %s: %w (no %s file); left as it is", dd, ErrNotOurDatadir, DatadirMark)
	}
	return os.RemoveAll(dd)
}

// CopyDatadir copies a stopped server's datadir src, which perfbisect created
// (see RemoveDatadir), to dst (which must not exist), file by file with modes
// kept: the snapshot/restore that gives every run the same starting state.
// Files are reflinked where the filesystem can (FICLONE), else copied (sparse
// files as full ones).
func CopyDatadir(src, dst string) error {
	if _, err := os.Stat(dst); err == nil {
		return fmt.Errorf("copy datadir: %s already exists", dst)
	}
	if !isOurDatadir(src) {
		return fmt.Errorf("copy datadir %s: %w", src, ErrNotOurDatadir)
	}
	// The mark first: a copy cut short (kill -9) is still ours to delete.
	if err := os.MkdirAll(dst, 0o700); err != nil {
		return err
	}
	if err := markDatadir(dst); err != nil {
		return err
	}
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(target, info.Mode().Perm()|0o700)
		case rel == DatadirMark:
			return nil // written first
		case info.Mode().IsRegular():
			return CopyFile(p, target, info.Mode().Perm())
		case info.Mode()&os.ModeSymlink != 0:
			l, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(l, target)
		default:
			return nil // sockets, fifos: not part of a datadir's state
		}
	})
}

// CopyFile copies the regular file src to dst, a new file of mode perm (an
// existing dst is an error): by a reflink where the filesystem has them,
// else by the kernel's copy.
func CopyFile(src, dst string, perm os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	// A reflink (FICLONE: btrfs, XFS with reflink=1, bcachefs) shares the
	// blocks until either copy writes; elsewhere the kernel copies
	// (copy_file_range under io.Copy).
	if unix.IoctlFileClone(int(out.Fd()), int(in.Fd())) == nil {
		return out.Close()
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copy %s: %w", src, err)
	}
	return out.Close()
}
