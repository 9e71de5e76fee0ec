package bisect

// CatFileObjects is the number of packed objects from which OpenRepo reads a
// repository's objects through git cat-file (when the git command is
// installed) instead of go-git's pack reader: go-git holds every pack's
// index in memory, names and a map from offset to name, about 117 MB for
// the 1,052,071 objects of a MySQL history (ottok/mysql-wsrep), where a
// server tree's checkout should cost perfbisect well under 100 MB.
// git maps its pack indexes and keeps them out of perfbisect's heap.
var CatFileObjects int64 = 200_000
