package bench

import "context"

// An event is one transaction of a workload (sysbench's event() function). The
// order of random draws follows the Lua scripts, so the statement stream of a
// thread is fixed by the seed.

// thread is one client thread: its session, its random numbers and the run's
// shared state.
type thread struct {
	id     int
	o      *Options
	wl     workload
	groups []group
	trx    bool
	rnd    *Rand
	uniq   *uniqueSeq
	sess   *session
	lg     *legacyThread // oltp_legacy's state, made at its first event
	prog   program       // the workload's events when it is not the catalogue's
	clock  *stmtClock    // Hooks.Statements: its sessions' statement times
}

// event runs one event and counts its statements into c, which holds what
// succeeded even when an error is returned.
func (t *thread) event(ctx context.Context, c *counts) error {
	if t.prog != nil {
		return t.prog.event(ctx, t, c)
	}
	if t.wl.legacy {
		return t.legacyEvent(ctx, c)
	}
	if t.trx {
		if err := t.sess.transaction(ctx, true, c); err != nil {
			return err
		}
	}
	for _, g := range t.groups {
		if err := t.group(ctx, g, c); err != nil {
			return err
		}
	}
	if t.trx {
		return t.sess.transaction(ctx, false, c)
	}
	return nil
}

// rowID draws a row id from the configured distribution (get_id()).
func (t *thread) rowID() int64 {
	return int64(t.rnd.Default(1, uint32(t.o.TableSize)))
}

// group runs one statement group on a table chosen uniformly for the group.
func (t *thread) group(ctx context.Context, g group, c *counts) error {
	table := int(t.rnd.Uniform(1, uint32(t.o.Tables)))
	s := t.sess
	for range g.count(t.o) {
		var err error
		switch g.op {
		case opSelectPoint:
			err = s.query(ctx, table, g.kind, c, t.rowID())
		case opSelectRange:
			id := t.rowID()
			err = s.query(ctx, table, g.kind, c, id, id+int64(t.o.RangeSize)-1)
		case opUpdateIndex:
			err = s.exec(ctx, table, g.kind, c, t.rowID())
		case opUpdateNonIndex:
			cv := t.rnd.String(cTemplate)
			err = s.exec(ctx, table, g.kind, c, cv, t.rowID())
		case opDeleteInsert:
			id, k := t.rowID(), t.rowID()
			cv, pad := t.rnd.String(cTemplate), t.rnd.String(padTemplate)
			if err = s.exec(ctx, table, stmtDelete, c, id); err == nil {
				err = s.exec(ctx, table, stmtInsert, c, id, k, cv, pad)
			}
		case opDeleteOnly:
			err = s.exec(ctx, table, stmtDelete, c, t.rowID())
		case opInsertOnly:
			k := t.rowID()
			cv, pad := t.rnd.String(cTemplate), t.rnd.String(padTemplate)
			var id int64 // 0: the server assigns the AUTO_INCREMENT id
			if !t.o.AutoInc {
				id = int64(t.uniq.next()) - 1<<31 // uint32 to signed INT, as sysbench
			}
			err = s.exec(ctx, table, stmtInsert, c, id, k, cv, pad)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
