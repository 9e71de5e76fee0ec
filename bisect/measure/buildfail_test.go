package measure

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/build"
)

// How build failures reach the bisection: a compiler error or a timeout makes
// the revision untestable (skipped); a full disk is the machine's fault and
// stops the session (returned as is).
func TestBuildFailuresSkipOrStop(t *testing.T) {
	old := LockPath
	LockPath = filepath.Join(t.TempDir(), "measure.lock") // not another perfbisect's on this machine
	defer func() { LockPath = old }()
	r := gitRepoWithCommit(t)
	repo, head := r.repo, r.head
	for _, c := range []struct {
		cmd        string
		timeout    time.Duration
		untestable bool
		reason     string
	}{
		{`echo "x.c:1:1: error: unknown type name 'foo'"; exit 1`, 0, true, "build failed"},
		{`sleep 30`, time.Second, true, "build timed out"},
		{`echo "cc1: fatal error: x.s: No space left on device"; exit 1`, 0, false, ""},
	} {
		state := filepath.Join(t.TempDir(), "state")
		b := &build.Builder{Repo: repo, StateDir: state, Timeout: c.timeout, Recipe: build.Recipe{BuildCmd: c.cmd}}
		var recorded []BuildRecord
		m := New(Config{Builder: b, StateDir: state, OnBuild: func(r BuildRecord) { recorded = append(recorded, r) }})
		_, err := m.Measure(context.Background(), head, 1)
		var ue *bisect.UntestableError
		var be *build.BuildError
		switch {
		case c.untestable && (!errors.As(err, &ue) || ue.Reason != c.reason):
			t.Errorf("%s: want untestable (%s), got %v", c.cmd, c.reason, err)
		case !c.untestable && (errors.As(err, &ue) || !errors.As(err, &be) || !be.Machine || !strings.Contains(err.Error(), "fix the machine")):
			t.Errorf("%s: want the machine's failure returned as is, got %v", c.cmd, err)
		}
		if len(recorded) != 1 || recorded[0].Error == "" {
			t.Errorf("%s: build records %+v", c.cmd, recorded)
		}
	}
}
