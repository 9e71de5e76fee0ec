package bench

// SetBeginSQL makes the workloads send q in place of BEGIN until the returned
// function restores it: a statement a current server refuses to prepare
// stands in for an old server's refused BEGIN.
func SetBeginSQL(q string) (restore func()) {
	old := sqlBegin
	sqlBegin = q
	return func() { sqlBegin = old }
}
