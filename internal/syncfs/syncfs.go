// Package syncfs flushes a filesystem to disk, for the markers that say a
// directory's files are complete (a build cache entry, a datadir snapshot):
// the files must reach the disk before the marker does.
package syncfs

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Dir flushes the filesystem that holds dir (syncfs(2)): every file written
// under dir is on disk when it returns. Errors name dir.
func Dir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	defer f.Close()
	if err := unix.Syncfs(int(f.Fd())); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}
