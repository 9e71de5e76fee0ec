package measure

import (
	"context"
	"errors"
	"fmt"

	"github.com/perfbisect/perfbisect/bench"
	"github.com/perfbisect/perfbisect/bench/sysbench"
	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/build"
	"github.com/perfbisect/perfbisect/serverctl"
)

// step is the part of a run (or of a datadir snapshot's preparation) that
// failed.
type step int

const (
	stepBuild         step = iota // building the revision
	stepFind                      // finding the server in the revision's install tree
	stepInit                      // initialising the datadir
	stepStart                     // starting the server
	stepLoad                      // loading the workload's tables
	stepWorkload                  // the workload's warm-up and window
	stepStop                      // stopping the server after the window
	stepStopAfterLoad             // stopping the server after loading tables
)

// stepReason is what an untestable revision's failure says of each step.
var stepReason = map[step]string{
	stepBuild:         "build failed",
	stepFind:          "no usable server in the build",
	stepInit:          "datadir initialisation failed",
	stepStart:         "server did not start",
	stepLoad:          "loading tables failed",
	stepWorkload:      "server crashed during the run",
	stepStop:          "server crashed",
	stepStopAfterLoad: "server did not shut down cleanly after loading",
}

// failure is what a failed step left: the step's error (nil when only the
// server's death says it failed) and the server's death (serverctl.Server.Died,
// nil while it is alive).
type failure struct {
	step step
	err  error
	died error
}

// judge decides whose a failed step is, as the error the measurer returns
// (nil when neither err nor died is set). In order:
//   - the session was interrupted: ctx.Err();
//   - the build failed through the revision's code (not the machine's, as
//     build.BuildError.Machine says), or its install tree holds no usable
//     server: the revision's, an *bisect.UntestableError;
//   - the server was killed by SIGKILL from outside it (the OOM killer, a
//     user): errKilled, retried (every attempt killed: the revision's);
//   - the server lost the race for its port at every start (serverctl.Start
//     tries other ports first): transient;
//   - the server died, or refused to initialise, start or stop (a crash, an
//     option it does not know): the revision's;
//   - the workload refused by a live server (a statement, sysbench's FATAL
//     line): the revision's;
//   - sysbench missing, an option sysbench 1.0 lacks, the user's Lua script
//     failing on its own: the machine's or the user's, as they are;
//   - the connection lost, or refused, while the server lived: transient,
//     retried a bounded number of times;
//   - anything else: the machine's, as it is.
//
// A full or read-only disk is judged after this, by Measurer.diskFault (the
// server's refusal may be the disk's).
func judge(ctx context.Context, commit string, f failure) error {
	if f.err == nil && f.died == nil {
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	untestable := func(reason string, err error) error {
		return &bisect.UntestableError{Commit: commit, Reason: reason, Err: err}
	}
	if f.died != nil {
		if killedFromOutside(f.died) {
			return killedErr(f.died)
		}
		reason := stepReason[f.step]
		if f.step == stepLoad {
			reason = "server crashed while loading tables"
		}
		return untestable(reason, f.died)
	}
	switch f.step {
	case stepBuild:
		var be *build.BuildError
		switch {
		case !errors.As(f.err, &be) || be.Machine:
			return f.err
		case be.TimedOut:
			return untestable("build timed out", f.err)
		}
		return untestable(stepReason[f.step], f.err)
	case stepFind:
		return untestable(stepReason[f.step], f.err)
	case stepInit, stepStart, stepStop, stepStopAfterLoad:
		var se *serverctl.ServerError
		switch {
		case killedFromOutside(f.err):
			return killedErr(f.err)
		case errors.As(f.err, &se) && se.PortTaken() && f.step == stepStart:
			return fmt.Errorf("%w: %v", errTransient, f.err)
		case se != nil:
			return untestable(stepReason[f.step], f.err)
		}
		return f.err
	case stepLoad:
		if errors.Is(f.err, sysbench.ErrScriptFailed) {
			return f.err // the user's script, not the revision
		}
		return untestable(stepReason[f.step], f.err)
	}
	return judgeWorkload(commit, f.err)
}

// judgeWorkload is judge for a workload that failed while its server lived.
func judgeWorkload(commit string, err error) error {
	var se *bench.StatementError
	var sbe *sysbench.Error
	switch {
	case errors.Is(err, bench.ErrConnectionLost):
		return err // retried
	case errors.As(err, &se):
		return &bisect.UntestableError{Commit: commit, Reason: "a workload statement failed", Err: err}
	case errors.Is(err, sysbench.ErrNoSysbench), errors.Is(err, sysbench.ErrNotInSysbench), errors.Is(err, sysbench.ErrScriptFailed):
		return err
	case errors.As(err, &sbe):
		// sysbench failed against a live server: its FATAL line names the
		// statement and the server's message.
		return &bisect.UntestableError{Commit: commit, Reason: "sysbench failed", Err: err}
	}
	// No statement failed (a refused connect, a timeout).
	return fmt.Errorf("%w: %v", errTransient, err)
}
