package bench

import "context"

// A Driver runs a workload's commands against a server: the built-in
// workload (Builtin: this package's Prepare, Run and Cleanup over
// go-sql-driver/mysql) or real sysbench (Sysbench: the same workload by
// sysbench 1.0's Lua scripts, its report parsed). Run reports through hooks
// as Run does. Errors as the driver's functions return them.
type Driver interface {
	Prepare(ctx context.Context, conn Connection, o Options) error
	Run(ctx context.Context, conn Connection, o Options, hooks Hooks) (*Result, error)
	Cleanup(ctx context.Context, conn Connection, o Options) error
}

// Builtin is the built-in workload as a Driver.
type Builtin struct{}

// Prepare creates and loads the tables (Prepare).
func (Builtin) Prepare(ctx context.Context, conn Connection, o Options) error {
	return Prepare(ctx, conn.DSN(), o)
}

// Run measures the workload (Run).
func (Builtin) Run(ctx context.Context, conn Connection, o Options, hooks Hooks) (*Result, error) {
	return Run(ctx, conn.DSN(), o, hooks)
}

// Cleanup drops the tables (Cleanup).
func (Builtin) Cleanup(ctx context.Context, conn Connection, o Options) error {
	return Cleanup(ctx, conn.DSN(), o)
}

// Prepare runs sysbench's prepare (RunSysbench).
func (s Sysbench) Prepare(ctx context.Context, conn Connection, o Options) error {
	_, err := RunSysbench(ctx, conn, o, "prepare", s)
	return err
}

// Run runs sysbench's run with hooks in place of s.Hooks (RunSysbench).
func (s Sysbench) Run(ctx context.Context, conn Connection, o Options, hooks Hooks) (*Result, error) {
	s.Hooks = hooks
	return RunSysbench(ctx, conn, o, "run", s)
}

// Cleanup runs sysbench's cleanup (RunSysbench).
func (s Sysbench) Cleanup(ctx context.Context, conn Connection, o Options) error {
	_, err := RunSysbench(ctx, conn, o, "cleanup", s)
	return err
}

var (
	_ Driver = Builtin{}
	_ Driver = Sysbench{}
)
