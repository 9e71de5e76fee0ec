package build

import (
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"fmt"
	"io"
)

// CodeDigest returns the SHA-256 (hex) of what an ELF executable or shared
// library runs: the name, type, flags and contents of every section loaded
// into memory (SHF_ALLOC: code, read-only data, initialised data; the size of
// .bss), except the GNU build ID note, which hashes the whole file including
// its debug information. Two builds of the same source with the same compiler
// and flags in the same directories digest the same even when their
// timestamps, debug information or build-ID differ; a build that compiled any
// other code does not. Errors: the file is not an ELF file or cannot be read.
func CodeDigest(path string) (string, error) {
	f, err := elf.Open(path)
	if err != nil {
		return "", fmt.Errorf("code digest of %s: %w", path, err)
	}
	defer f.Close()
	h := sha256.New()
	for _, s := range f.Sections {
		if s.Flags&elf.SHF_ALLOC == 0 || s.Name == ".note.gnu.build-id" {
			continue
		}
		fmt.Fprintf(h, "%s %v %v %d\x00", s.Name, s.Type, s.Flags, s.Size)
		if s.Type == elf.SHT_NOBITS {
			continue
		}
		if _, err := io.Copy(h, s.Open()); err != nil {
			return "", fmt.Errorf("code digest of %s: section %s: %w", path, s.Name, err)
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
