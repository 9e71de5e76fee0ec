// Package store is perfbisect's embedded store: one SQLite database
// (modernc.org/sqlite, pure Go) per state directory that holds every session,
// every event of a session (session.Event: a revision prepared or found
// untestable, a run with its metrics and the options the server read), every
// build attempt and every decision, so that an
// interrupted session can be resumed without measuring again what it had
// measured, and any session can be shown later (status, log).
//
// Every write is one transaction; the database runs in WAL mode with
// synchronous=FULL, so a crash or a kill loses at most the event being written.
// The file is created 0600 (it records option files).
package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/perfbisect/perfbisect/internal/cliflag"
	"os"
	"path/filepath"
	"strings"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/bisect/session"
	"github.com/perfbisect/perfbisect/internal/faultpoint"
)

// FileName is the store's file in a state directory.
const FileName = "perfbisect.db"

// State is where a stored session stands; stored as its string.
type State string

// Session states.
const (
	Running State = "running" // unfinished: perfbisect start (or resume) continues it
	Done    State = "done"    // ended with an answer (found, ambiguous, no regression)
	Failed  State = "failed"  // ended with an error that resuming would repeat (an endpoint that cannot be measured)
	Reset   State = "reset"   // ended by perfbisect reset (or, for a git bisect run session, by git bisect reset)
)

// Kind is what a stored session is; stored as its string.
type Kind string

// Kinds of sessions.
const (
	KindStart Kind = "start" // perfbisect start: a whole bisection
	// KindRun is a git bisect run bisection: one session for all the
	// perfbisect run calls of one git bisection, each placing one commit.
	KindRun Kind = "run"
	// KindCompare is perfbisect compare: two revisions head to head.
	KindCompare Kind = "compare"
	// KindScan is perfbisect scan: a series of commits and its shifts.
	KindScan Kind = "scan"
)

// Store is an open store. Its methods are safe for one process at a time to
// write (the state directory's lock guarantees that) and for others to read.
type Store struct {
	db   *sql.DB
	path string
}

const schema = `
CREATE TABLE IF NOT EXISTS sessions (
	id       INTEGER PRIMARY KEY,
	kind     TEXT NOT NULL,
	state    TEXT NOT NULL,
	key      TEXT NOT NULL,
	args     TEXT NOT NULL,
	dir      TEXT NOT NULL,
	good     TEXT NOT NULL,
	bad      TEXT NOT NULL,
	config   TEXT NOT NULL,
	created  TEXT NOT NULL,
	updated  TEXT NOT NULL,
	outcome  TEXT NOT NULL DEFAULT '',
	result   TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS events (
	session     INTEGER NOT NULL REFERENCES sessions(id),
	seq         INTEGER NOT NULL,
	kind        TEXT NOT NULL,
	commit_hash TEXT NOT NULL,
	reason      TEXT NOT NULL DEFAULT '',
	error       TEXT NOT NULL DEFAULT '',
	run         TEXT NOT NULL DEFAULT '',
	options     TEXT NOT NULL DEFAULT '',
	created     TEXT NOT NULL,
	PRIMARY KEY (session, seq)
);
CREATE TABLE IF NOT EXISTS steps (
	session     INTEGER NOT NULL REFERENCES sessions(id),
	seq         INTEGER NOT NULL,
	role        TEXT NOT NULL,
	commit_hash TEXT NOT NULL,
	verdict     TEXT NOT NULL,
	step        TEXT NOT NULL,
	created     TEXT NOT NULL,
	PRIMARY KEY (session, seq)
);
CREATE TABLE IF NOT EXISTS builds (
	session     INTEGER NOT NULL REFERENCES sessions(id),
	commit_hash TEXT NOT NULL,
	recipe      TEXT NOT NULL,
	prefix      TEXT NOT NULL,
	seconds     REAL NOT NULL,
	flavor      TEXT NOT NULL,
	version     TEXT NOT NULL,
	error       TEXT NOT NULL,
	created     TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS events_commit ON events (commit_hash);
`

// Open opens (creating it 0600 if needed) the store in stateDir. Errors name
// the file.
func Open(stateDir string) (*Store, error) {
	path := filepath.Join(stateDir, FileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", path, err)
	}
	f.Close()
	dsn := "file:" + path + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=foreign_keys(1)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", path, err)
	}
	db.SetMaxOpenConns(1) // one writer; SQLite serialises anyway
	if err := intact(db, path); err != nil {
		db.Close()
		return nil, fmt.Errorf("%w (move it away to start afresh; builds and datadir snapshots stay usable)", err)
	}
	if err := migrate(db, path); err != nil {
		db.Close()
		return nil, err
	}
	return &Store{db: db, path: path}, nil
}

// intact runs SQLite's quick check of the store at path: an error saying it
// is damaged, naming the file.
func intact(db *sql.DB, path string) error {
	var check string
	if err := db.QueryRow(`PRAGMA quick_check`).Scan(&check); err != nil || check != "ok" {
		if err == nil {
			err = errors.New(check)
		}
		return fmt.Errorf("store %s is damaged: %v", path, err)
	}
	return nil
}

// OpenReadOnly opens the store in stateDir for reading only, as on a
// read-only filesystem (status, log and report must still show what a
// session stored when the disk went read-only): nothing is created,
// migrated or written; a write fails. Errors name the file: it is missing,
// damaged, or of another schema version than this perfbisect's (an older
// one cannot be migrated without writing: make the disk writable).
func OpenReadOnly(stateDir string) (*Store, error) {
	path := filepath.Join(stateDir, FileName)
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("store %s: %w", path, err)
	}
	// With a WAL file left (a writer was killed), SQLite reads it through
	// the -shm file that is there too. Without one, it cannot make the
	// -shm file on a read-only disk: the database is opened as immutable
	// (nothing is in a WAL to miss, and nobody can write there).
	dsn := "file:" + path + "?mode=ro&_pragma=busy_timeout(10000)"
	if fi, err := os.Stat(path + "-wal"); err != nil || fi.Size() == 0 {
		dsn = "file:" + path + "?mode=ro&immutable=1"
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	if err := intact(db, path); err != nil {
		db.Close()
		return nil, err
	}
	var v int
	if err := db.QueryRow(`PRAGMA user_version`).Scan(&v); err != nil {
		db.Close()
		return nil, fmt.Errorf("store %s: schema version: %w", path, err)
	}
	if v != SchemaVersion {
		db.Close()
		return nil, fmt.Errorf("store %s has schema version %d and this perfbisect reads %d: it cannot be migrated read-only (make its disk writable)", path, v, SchemaVersion)
	}
	return &Store{db: db, path: path}, nil
}

// SchemaVersion is the layout of the store's tables this perfbisect writes,
// kept in the database's user_version. Version 1 is the layout of every
// store written before the version was kept (user_version 0 with tables);
// version 2 adds events.took_ns, the time a prepare took (the probabilistic
// search weighs builds by it, so a resumed session must see it again);
// version 3 adds events.mark, the verdict of a mark given by hand;
// version 4 adds builds.cached, an install found in the build cache (a
// resumed session's endpoints, say), not built; version 5 adds
// sessions.workload, what the session's runs measure in one line (Describe).
const SchemaVersion = 5

// migrations[v] takes a store of version v to v+1; migrations[0] creates
// version 1 (on an empty file, or over the unversioned tables of version 1).
var migrations = []string{schema,
	`ALTER TABLE events ADD COLUMN took_ns INTEGER NOT NULL DEFAULT 0`,
	`ALTER TABLE events ADD COLUMN mark TEXT NOT NULL DEFAULT ''`,
	`ALTER TABLE builds ADD COLUMN cached INTEGER NOT NULL DEFAULT 0`,
	`ALTER TABLE sessions ADD COLUMN workload TEXT NOT NULL DEFAULT ''`}

// migrate brings the store at path to SchemaVersion in one transaction, or
// refuses a store a newer perfbisect wrote. The version is read again inside
// the (immediate: write-locked) transaction, so two processes opening an old
// store do not both migrate it.
func migrate(db *sql.DB, path string) error {
	var v int
	if err := db.QueryRow(`PRAGMA user_version`).Scan(&v); err != nil {
		return fmt.Errorf("store %s: schema version: %w", path, err)
	}
	if v == SchemaVersion {
		return nil
	}
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("store %s: %w", path, err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
		return fmt.Errorf("store %s: migrate: %w", path, err)
	}
	committed := false
	defer func() {
		if !committed {
			_, _ = conn.ExecContext(ctx, `ROLLBACK`)
		}
	}()
	if err := conn.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&v); err != nil {
		return fmt.Errorf("store %s: schema version: %w", path, err)
	}
	if v > SchemaVersion {
		return fmt.Errorf("store %s has schema version %d, written by a newer perfbisect (this one reads up to %d): upgrade perfbisect, or pass another --state-dir", path, v, SchemaVersion)
	}
	for ; v < SchemaVersion; v++ {
		if _, err := conn.ExecContext(ctx, migrations[v]); err != nil {
			return fmt.Errorf("store %s: migrate schema version %d to %d: %w (a damaged store can be moved away; builds and snapshots stay usable)", path, v, v+1, err)
		}
	}
	if _, err := conn.ExecContext(ctx, fmt.Sprintf(`PRAGMA user_version = %d`, SchemaVersion)); err != nil {
		return fmt.Errorf("store %s: %w", path, err)
	}
	if _, err := conn.ExecContext(ctx, `COMMIT`); err != nil {
		return fmt.Errorf("store %s: migrate: %w", path, err)
	}
	committed = true
	return nil
}

// Path is the store's file.
func (s *Store) Path() string { return s.path }

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// Session is one stored session.
type Session struct {
	ID      int64
	Kind    Kind
	State   State
	Key     string   // hash of everything that shapes the answer (refs, flags, option file)
	Args    []string // the command line's arguments after the program name, for resume
	Dir     string   // the working directory of that command line
	Good    string   // full hashes of the endpoints
	Bad     string
	Config  json.RawMessage // the session's Identity as stored (see Session.Identity)
	Created time.Time
	Updated time.Time
	Outcome string          // found, ambiguous, no-regression, error ... once ended
	Result  json.RawMessage // the final report document, once ended
	// Workload is what the session's runs measure, in one line
	// (bench.Workload's Summary; Describe), "" when not said.
	Workload string
}

// CommandLine is the session's command line as a shell takes it:
// "perfbisect" and its arguments, each quoted when it needs it
// (--workload-options '--scale=1 --tables=1').
func (x *Session) CommandLine() string {
	q := make([]string, len(x.Args))
	for i, a := range x.Args {
		q[i] = cliflag.ShellQuote(a)
	}
	return strings.Join(append([]string{"perfbisect"}, q...), " ")
}

func now() string { return time.Now().UTC().Format(time.RFC3339Nano) }

// Begin records a new running session of kind with its identity (and the
// identity's Key) and returns it: args are the command line after the
// program's name, dir its working directory, good and bad the endpoints'
// full hashes.
func (s *Store) Begin(kind Kind, args []string, dir, good, bad string, id Identity) (*Session, error) {
	a, _ := json.Marshal(args)
	c, err := json.Marshal(id)
	if err != nil {
		return nil, err
	}
	key := id.Key()
	t := now()
	res, err := s.db.Exec(`INSERT INTO sessions (kind, state, key, args, dir, good, bad, config, created, updated) VALUES (?,?,?,?,?,?,?,?,?,?)`,
		kind, Running, key, string(a), dir, good, bad, string(c), t, t)
	if err != nil {
		return nil, fmt.Errorf("store %s: begin session: %w", s.path, err)
	}
	n, _ := res.LastInsertId()
	return s.Session(n)
}

// Describe records what session id's runs measure, in one line (a
// workload's Summary), for the documents made from the store alone (a
// perfbisect run session's, at its end).
func (s *Store) Describe(id int64, workload string) error {
	if _, err := s.db.Exec(`UPDATE sessions SET workload = ? WHERE id = ?`, workload, id); err != nil {
		return fmt.Errorf("store %s: session %d: %w", s.path, id, err)
	}
	return nil
}

const sessionCols = `id, kind, state, key, args, dir, good, bad, config, created, updated, outcome, result, workload`

func scanSession(row interface{ Scan(...any) error }) (*Session, error) {
	var x Session
	var args, config, created, updated, result string
	if err := row.Scan(&x.ID, &x.Kind, &x.State, &x.Key, &args, &x.Dir, &x.Good, &x.Bad, &config, &created, &updated, &x.Outcome, &result, &x.Workload); err != nil {
		return nil, err
	}
	_ = json.Unmarshal([]byte(args), &x.Args)
	x.Config = json.RawMessage(config)
	if result != "" {
		x.Result = json.RawMessage(result)
	}
	x.Created, _ = time.Parse(time.RFC3339Nano, created)
	x.Updated, _ = time.Parse(time.RFC3339Nano, updated)
	return &x, nil
}

// Session returns session id, or an error when there is none.
func (s *Store) Session(id int64) (*Session, error) {
	x, err := scanSession(s.db.QueryRow(`SELECT `+sessionCols+` FROM sessions WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("store %s: no session %d", s.path, id)
	}
	return x, err
}

// Current returns the newest running session of kind, or nil when every session
// of that kind has ended.
func (s *Store) Current(kind Kind) (*Session, error) {
	x, err := scanSession(s.db.QueryRow(`SELECT `+sessionCols+` FROM sessions WHERE kind = ? AND state = ? ORDER BY id DESC LIMIT 1`, kind, Running))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return x, err
}

// Sessions lists every session, oldest first.
func (s *Store) Sessions() ([]*Session, error) {
	rows, err := s.db.Query(`SELECT ` + sessionCols + ` FROM sessions ORDER BY id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*Session
	for rows.Next() {
		x, err := scanSession(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, x)
	}
	return out, rows.Err()
}

// End sets a session's final state (Done, Failed or Reset) with its outcome and
// result document (nil for none).
func (s *Store) End(id int64, state State, outcome string, result any) error {
	var r []byte
	if result != nil {
		var err error
		if r, err = json.Marshal(result); err != nil {
			return err
		}
	}
	_, err := s.db.Exec(`UPDATE sessions SET state = ?, outcome = ?, result = ?, updated = ? WHERE id = ?`, state, outcome, string(r), now(), id)
	if err != nil {
		return fmt.Errorf("store %s: end session %d: %w", s.path, id, err)
	}
	return nil
}

// Reopen makes the ended session id running again, for marks given by hand
// after it ended: its outcome and result are cleared and its steps deleted
// (resuming it replays its events and decides every step again, the marks
// included), in one transaction.
func (s *Store) Reopen(id int64) error {
	tx, err := s.db.Begin()
	if err != nil {
		return fmt.Errorf("store %s: reopen session %d: %w", s.path, id, err)
	}
	defer tx.Rollback()
	if _, err := tx.Exec(`UPDATE sessions SET state = ?, outcome = '', result = '', updated = ? WHERE id = ?`, Running, now(), id); err != nil {
		return fmt.Errorf("store %s: reopen session %d: %w", s.path, id, err)
	}
	if _, err := tx.Exec(`DELETE FROM steps WHERE session = ?`, id); err != nil {
		return fmt.Errorf("store %s: reopen session %d: %w", s.path, id, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store %s: reopen session %d: %w", s.path, id, err)
	}
	return nil
}

// Append stores e as the session's event number seq, in one transaction. A seq
// that is already stored is an error (the caller's bookkeeping is wrong). The
// options the server read (e.Run.ServerOptions) go into their own column.
func (s *Store) Append(id int64, seq int, e session.Event) error {
	var run []byte
	var options string
	if e.Run != nil {
		run, _ = json.Marshal(e.Run)
		options = e.Run.ServerOptions
	}
	_, err := s.db.Exec(`INSERT INTO events (session, seq, kind, commit_hash, reason, error, run, options, created, took_ns, mark) VALUES (?,?,?,?,?,?,?,?,?,?,?)`,
		id, seq, e.Kind, e.Commit, e.Reason, e.Err, string(run), options, now(), int64(e.Took), e.Mark)
	if err != nil {
		return fmt.Errorf("store %s: event %d of session %d: %w", s.path, seq, id, err)
	}
	faultpoint.Hit("store-write") // the event is stored, the session's time not yet
	_, _ = s.db.Exec(`UPDATE sessions SET updated = ? WHERE id = ?`, now(), id)
	return nil
}

// Events returns a session's events in order (event i has seq i).
func (s *Store) Events(id int64) ([]session.Event, error) {
	rows, err := s.db.Query(`SELECT seq, kind, commit_hash, reason, error, run, options, took_ns, mark FROM events WHERE session = ? ORDER BY seq`, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []session.Event
	for rows.Next() {
		var e session.Event
		var seq int
		var run, options string
		var took int64
		if err := rows.Scan(&seq, &e.Kind, &e.Commit, &e.Reason, &e.Err, &run, &options, &took, &e.Mark); err != nil {
			return nil, err
		}
		e.Took = time.Duration(took)
		if seq != len(out) {
			return nil, fmt.Errorf("store %s: session %d: event %d missing", s.path, id, len(out))
		}
		if run != "" {
			e.Run = new(bisect.Run)
			if err := json.Unmarshal([]byte(run), e.Run); err != nil {
				return nil, fmt.Errorf("store %s: event %d of session %d: %w", s.path, seq, id, err)
			}
			e.Run.ServerOptions = options
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// ServerOptions returns, per commit of session id, the options the server
// read in the commit's last stored run (bisect.Run.ServerOptions), in the
// order the commits were first measured; commits without such a run are left
// out. It reads only the options column, not the runs.
func (s *Store) ServerOptions(id int64) (commits, options []string, err error) {
	rows, err := s.db.Query(`SELECT commit_hash, options FROM events WHERE session = ? AND options != '' ORDER BY seq`, id)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	at := map[string]int{}
	for rows.Next() {
		var c, o string
		if err := rows.Scan(&c, &o); err != nil {
			return nil, nil, err
		}
		if i, ok := at[c]; ok {
			options[i] = o
			continue
		}
		at[c] = len(commits)
		commits, options = append(commits, c), append(options, o)
	}
	return commits, options, rows.Err()
}

// Truncate deletes a session's events from seq on (and its steps from stepSeq
// on), in one transaction: used when a resumed session no longer follows the
// stored path, so that the store keeps only what the session really used.
func (s *Store) Truncate(id int64, seq, stepSeq int) error {
	tx, err := s.db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.Exec(`DELETE FROM events WHERE session = ? AND seq >= ?`, id, seq); err != nil {
		return err
	}
	if _, err := tx.Exec(`DELETE FROM steps WHERE session = ? AND seq >= ?`, id, stepSeq); err != nil {
		return err
	}
	return tx.Commit()
}

// Step is one stored decision: its role, commit and verdict as columns for
// queries, and the whole session.Step as JSON (Decisions decodes it).
type Step struct {
	Seq      int
	Role     session.Role
	Commit   string
	Verdict  session.Verdict
	Evidence json.RawMessage
	Created  time.Time
}

// AddStep stores decision number seq of a session, st (its role, commit
// and verdict also as columns); a seq already stored is replaced (a resumed
// session decides the replayed steps again, identically).
func (s *Store) AddStep(id int64, seq int, st session.Step) error {
	ev, err := json.Marshal(st)
	if err != nil {
		return err
	}
	_, err = s.db.Exec(`INSERT OR REPLACE INTO steps (session, seq, role, commit_hash, verdict, step, created) VALUES (?,?,?,?,?,?,?)`,
		id, seq, string(st.Role), st.Commit, string(st.Verdict), string(ev), now())
	if err != nil {
		return fmt.Errorf("store %s: step %d of session %d: %w", s.path, seq, id, err)
	}
	return nil
}

// Decisions returns a session's decisions in order, decoded into the
// session's own type: the one place a stored step's evidence is read.
// Errors: the store's, or a step whose evidence does not decode (naming
// the store and the step).
func (s *Store) Decisions(id int64) ([]session.Step, error) {
	steps, err := s.Steps(id)
	if err != nil {
		return nil, err
	}
	out := make([]session.Step, 0, len(steps))
	for _, st := range steps {
		var x session.Step
		if err := json.Unmarshal(st.Evidence, &x); err != nil {
			return nil, fmt.Errorf("store %s: step %d of session %d: %w", s.path, st.Seq, id, err)
		}
		out = append(out, x)
	}
	return out, nil
}

// Steps returns a session's decisions in order.
func (s *Store) Steps(id int64) ([]Step, error) {
	rows, err := s.db.Query(`SELECT seq, role, commit_hash, verdict, step, created FROM steps WHERE session = ? ORDER BY seq`, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Step
	for rows.Next() {
		var st Step
		var ev, created string
		if err := rows.Scan(&st.Seq, &st.Role, &st.Commit, &st.Verdict, &ev, &created); err != nil {
			return nil, err
		}
		st.Evidence = json.RawMessage(ev)
		st.Created, _ = time.Parse(time.RFC3339Nano, created)
		out = append(out, st)
	}
	return out, rows.Err()
}

// RunCount returns how many runs are stored for a session.
func (s *Store) RunCount(id int64) (int, error) {
	var n int
	err := s.db.QueryRow(`SELECT count(*) FROM events WHERE session = ? AND kind = ? AND run != ''`, id, session.EventRun).Scan(&n)
	return n, err
}

// ByKey returns the newest session of kind with key (any state), or nil.
func (s *Store) ByKey(kind Kind, key string) (*Session, error) {
	x, err := scanSession(s.db.QueryRow(`SELECT `+sessionCols+` FROM sessions WHERE kind = ? AND key = ? ORDER BY id DESC LIMIT 1`, kind, key))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return x, err
}

// Build is one build attempt of a revision (a cache hit included).
type Build struct {
	Commit  string
	Recipe  string  // build.Recipe.Hash
	Prefix  string  // installed tree, "" when the build failed
	Seconds float64 // wall time of the attempt
	Flavor  string  // of the server in the tree
	Version string
	Error   string // why it failed, "" when it did not
	Cached  bool   // the install was in the build cache: nothing was built
	Created time.Time
}

// AddBuild records a build attempt of a session.
func (s *Store) AddBuild(id int64, b Build) error {
	_, err := s.db.Exec(`INSERT INTO builds (session, commit_hash, recipe, prefix, seconds, flavor, version, error, cached, created) VALUES (?,?,?,?,?,?,?,?,?,?)`,
		id, b.Commit, b.Recipe, b.Prefix, b.Seconds, b.Flavor, b.Version, b.Error, b.Cached, now())
	if err != nil {
		return fmt.Errorf("store %s: build of %.10s: %w", s.path, b.Commit, err)
	}
	return nil
}

// Builds returns a session's build attempts in order (cache hits
// included, Cached set).
func (s *Store) Builds(id int64) ([]Build, error) {
	rows, err := s.db.Query(`SELECT commit_hash, recipe, prefix, seconds, flavor, version, error, cached, created FROM builds WHERE session = ? ORDER BY rowid`, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Build
	for rows.Next() {
		var b Build
		var created string
		if err := rows.Scan(&b.Commit, &b.Recipe, &b.Prefix, &b.Seconds, &b.Flavor, &b.Version, &b.Error, &b.Cached, &created); err != nil {
			return nil, err
		}
		b.Created, _ = time.Parse(time.RFC3339Nano, created)
		out = append(out, b)
	}
	return out, rows.Err()
}

// EarlierRuns returns the runs of commit stored by other sessions than id
// whose configuration has the same values for every name in same (e.g. the
// workload, the build recipe, the option file's content): measurements of the
// same thing, usable to estimate noise (never to decide; decisions use runs of
// their own session, interleaved).
func (s *Store) EarlierRuns(id int64, commit string, same []string) ([]bisect.Run, error) {
	all, err := s.Sessions()
	if err != nil {
		return nil, err
	}
	cur, err := s.Session(id)
	if err != nil {
		return nil, err
	}
	var want map[string]string
	_ = json.Unmarshal(cur.Config, &want)
	var out []bisect.Run
	for _, x := range all {
		if x.ID == id {
			continue
		}
		var cfg map[string]string
		if json.Unmarshal(x.Config, &cfg) != nil {
			continue
		}
		match := true
		for _, k := range same {
			if cfg[k] != want[k] {
				match = false
				break
			}
		}
		if !match {
			continue
		}
		rows, err := s.db.Query(`SELECT run FROM events WHERE session = ? AND commit_hash = ? AND run != ''`, x.ID, commit)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var text string
			var r bisect.Run
			if rows.Scan(&text) == nil && json.Unmarshal([]byte(text), &r) == nil {
				out = append(out, r)
			}
		}
		rows.Close()
	}
	return out, nil
}

// LatestOf returns the newest session of any of kinds (of any kind when none
// is given), or nil.
func (s *Store) LatestOf(kinds ...Kind) (*Session, error) {
	q, args := `SELECT `+sessionCols+` FROM sessions ORDER BY id DESC LIMIT 1`, []any{}
	if len(kinds) > 0 {
		q = `SELECT ` + sessionCols + ` FROM sessions WHERE kind IN (?` + strings.Repeat(",?", len(kinds)-1) + `) ORDER BY id DESC LIMIT 1`
		for _, k := range kinds {
			args = append(args, k)
		}
	}
	x, err := scanSession(s.db.QueryRow(q, args...))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return x, err
}
