package runner

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/perfbisect/perfbisect/bisect"
)

// Task is one measurement a runner host carries out (`perfbisect task
// run`, the task as one JSON line on its standard input): runs of one
// revision's install tree, shipped before under its key.
type Task struct {
	// Perfbisect is the coordinator's build (Identity.Build): the host's
	// must be the same, since the built-in client is part of what is
	// measured.
	Perfbisect string `json:"perfbisect"`
	Commit     string `json:"commit"` // the revision (its runs' Commit)
	Label      string `json:"label"`  // how its progress lines name it
	Entry      string `json:"entry"`  // its install tree's key (build.EntryKey)
	Runs       int    `json:"runs"`
	// Settings are the measurement's settings (workload, option file,
	// server settings) as the application encodes them; the host's
	// application reads them the same way.
	Settings json.RawMessage `json:"settings"`
}

// Result is what a task's measurement gave, one JSON document on the task
// command's standard output.
type Result struct {
	Host string       `json:"host"` // the host's name for itself
	Runs []bisect.Run `json:"runs"`
	// ServerOptions are the runs' (bisect.Run.ServerOptions, which JSON
	// leaves out), in order.
	ServerOptions []string `json:"server_options,omitempty"`
	// Untestable is the revision's fault (its server does not start,
	// crashes): the runs taken before it are kept.
	Untestable *Untestable `json:"untestable,omitempty"`
	// Error is a failure that is not the revision's: the host's machine
	// (Kind "machine": a full disk, a missing package), the task (Kind
	// "usage": unreadable), another perfbisect (Kind "version"), or its
	// install tree missing (Kind "missing": shipped again).
	Error string `json:"error,omitempty"`
	Kind  string `json:"kind,omitempty"`
}

// Untestable is a bisect.UntestableError as a result carries it.
type Untestable struct {
	Reason string `json:"reason"`
	Err    string `json:"error"`
}

// Kinds of Result.Error.
const (
	KindMachine = "machine"
	KindUsage   = "usage"
	KindVersion = "version"
	// KindMissing: the task's install tree is not on the host (deleted,
	// evicted): the coordinator ships it again.
	KindMissing = "missing"
)

// Identity is what `perfbisect task id` says of the host's perfbisect and
// machine.
type Identity struct {
	// Build is the SHA-256 of the perfbisect executable: two hosts run the
	// same perfbisect when theirs are equal.
	Build   string `json:"build"`
	Version string `json:"version"` // as --version prints it
	Host    string `json:"host"`    // the host's name for itself
	OS      string `json:"os"`      // GOOS/GOARCH
	CPUs    int    `json:"cpus"`
}

var self struct {
	once sync.Once
	id   Identity
	err  error
}

// Self is this process's Identity (version as --version prints it).
// Errors: the executable cannot be read.
func Self(version string) (Identity, error) {
	self.once.Do(func() {
		exe, err := os.Executable()
		if err == nil {
			exe, err = filepath.EvalSymlinks(exe)
		}
		var f *os.File
		if err == nil {
			f, err = os.Open(exe)
		}
		if err != nil {
			self.err = fmt.Errorf("perfbisect's own executable: %w", err)
			return
		}
		defer f.Close()
		h := sha256.New()
		if _, err := io.Copy(h, bufio.NewReader(f)); err != nil {
			self.err = fmt.Errorf("perfbisect's own executable %s: %w", exe, err)
			return
		}
		name, _ := os.Hostname()
		self.id = Identity{Build: hex.EncodeToString(h.Sum(nil)), Host: name, OS: runtime.GOOS + "/" + runtime.GOARCH, CPUs: runtime.NumCPU()}
	})
	id := self.id
	id.Version = version
	return id, self.err
}

// ReadTask reads a task: one JSON document from r. Errors name what is
// wrong with it.
func ReadTask(r io.Reader) (Task, error) {
	var t Task
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&t); err != nil {
		return t, fmt.Errorf("task: %v (want the JSON a perfbisect coordinator sends)", err)
	}
	switch {
	case t.Commit == "", t.Entry == "":
		return t, errors.New("task: no commit or install tree")
	case t.Runs < 1 || t.Runs > 1000:
		return t, fmt.Errorf("task: %d runs", t.Runs)
	}
	return t, nil
}

// WatchInput ends the returned context when r (the task command's
// standard input, which the coordinator holds open until it has the
// result) reaches its end or fails: the coordinator, or the connection to
// it, went away, and the task must not leave a server running for nobody.
func WatchInput(ctx context.Context, r io.Reader) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		_, _ = io.Copy(io.Discard, r)
		cancel()
	}()
	return ctx, cancel
}
