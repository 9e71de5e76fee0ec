package bisect

// CatFileObjects is the number of packed objects from which OpenRepo reads a
// repository's objects through git cat-file (when the git command is
// installed) instead of go-git's pack reader: go-git holds every pack's
// index in its heap, git maps them (docs/measurements.md, "Memory and disk
// behind the design").
var CatFileObjects int64 = 200_000
