package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/bisect/measure"
	"github.com/perfbisect/perfbisect/bisect/report"
	"github.com/perfbisect/perfbisect/bisect/session"
	"github.com/perfbisect/perfbisect/bisect/store"
	"github.com/perfbisect/perfbisect/build"
)

// This file is a bisection's first phase with --binaries: the releases
// between good and bad that the vendors' tarballs serve are bisected on
// those binaries (nothing built), then the search goes on from source
// between the two releases it narrowed to. The two phases never mix their
// runs: a vendor's binary and a build here differ in compiler and flags, so
// the second phase measures its endpoints again from source.

// releaseRecipe is the recipe key of the first phase's runs: never the
// same measurement as a build's (store.SameMeasurement).
const releaseRecipe = "vendor binary tarballs"

// releaseChain is the releases of good..bad (all: the range) that
// su.Build.Binaries has tarballs of, oldest first, good first and bad last:
// the tagged commits (bisect.Releases) on bad's first-parent line that
// descend from good and whose tree states the tag's version, each with the
// measure.Side that unpacks its tarball. The chain is nil when good or bad
// has no tarball or no release between them has one; why says so.
func releaseChain(su *Setup, good, bad string, all []bisect.Commit) (chain []string, sides map[string]measure.Side, why string, err error) {
	g := bisect.NewGraph(all)
	line := g.FirstParentLine(bad, nil)
	rels, err := bisect.Releases(su.Repo, append([]string{good}, line...))
	if err != nil {
		return nil, nil, "", err
	}
	sides = map[string]measure.Side{}
	// A tarball stands for one commit: the newest tagged with its version
	// (the commits are asked newest first), as a release is the last
	// commit of its version; an older one tagged alike (v10.0.23 on the
	// commit that raised VERSION) is not that server.
	claim := map[string]string{}
	tarball := func(commit string) (*build.Tarball, string) {
		rel, ok := rels[commit]
		if !ok {
			return nil, fmt.Sprintf("%.10s has no version tag", commit)
		}
		tree, err := build.InspectTree(su.Repo, commit)
		if err != nil || tree.Version == nil {
			return nil, fmt.Sprintf("%s's tree states no version", rel.Tag)
		}
		if base, _, _ := strings.Cut(rel.Version, "-"); tree.Version.String() != base {
			return nil, fmt.Sprintf("%s's tree says version %s", rel.Tag, tree.Version)
		}
		t := su.Build.Binaries.For(tree.Flavor, rel.Version)
		if t == nil {
			return nil, fmt.Sprintf("%s (%s %s) has no tarball in %s", rel.Tag, tree.Flavor, rel.Version, su.Build.Binaries.Dir)
		}
		if newer, ok := claim[t.Path]; ok && newer != commit {
			return nil, fmt.Sprintf("%s at %.10s names %s %s, whose tarball stands for the newer %s at %.10s", rel.Tag, commit, tree.Flavor, rel.Version, rels[newer].Tag, newer)
		}
		claim[t.Path] = commit
		sides[commit] = measure.Side{Name: rel.Tag, Commit: commit, Tarball: t, OptionFile: su.OptionFile}
		return t, ""
	}
	_, whyBad := tarball(bad)
	var inside, served []string // releases between good and bad; those with a tarball
	for _, c := range line[1:] {
		if _, ok := rels[c]; !ok || !g.Descends(c, good) {
			continue
		}
		inside = append(inside, rels[c].Tag)
		if _, why := tarball(c); why == "" {
			chain = append(chain, c)
			served = append(served, rels[c].Tag)
		}
	}
	_, whyGood := tarball(good)
	slices.Reverse(chain)
	slices.Reverse(served)
	switch {
	case whyGood != "" || whyBad != "":
		var parts []string
		if whyGood != "" {
			parts = append(parts, "good "+whyGood)
		}
		if whyBad != "" {
			parts = append(parts, "bad "+whyBad)
		}
		why = strings.Join(parts, "; ")
		if len(served) > 0 {
			why += fmt.Sprintf("; %d release(s) between them have tarballs (%s): give releases for --good and --bad to bisect those first", len(served), strings.Join(served, " "))
		}
		return nil, nil, why, nil
	case len(inside) == 0:
		return nil, nil, "no release lies between good and bad", nil
	case len(served) == 0:
		return nil, nil, fmt.Sprintf("none of the %d release(s) between good and bad (%s) has a tarball in %s", len(inside), strings.Join(inside, " "), su.Build.Binaries.Dir), nil
	}
	chain = append(append([]string{good}, chain...), bad)
	return chain, sides, "", nil
}

// releaseIdentity is the first phase's identity: the start's, with the
// vendors' tarballs for a recipe and their names.
func releaseIdentity(su *Setup, cfg session.Config, chain []string, sides map[string]measure.Side) store.Identity {
	id := startIdentity(su, cfg, cfg.Good, cfg.Bad, true, false)
	id[store.KeyRecipe] = releaseRecipe
	delete(id, store.KeyLayouts) // tarballs are measured in their own layout
	var names []string
	for _, c := range chain {
		names = append(names, sides[c].Tarball.Name())
	}
	id[store.KeyBinaries] = su.Build.Binaries.Dir + ": " + strings.Join(names, " ")
	return id
}

// priorPhase is the stored first phase of key to go on with, and its
// events: an unfinished one (resumed) or a done one (replayed, said); nil
// when there is none, it failed or was reset, or it is done and a tarball
// it measured has changed since (the releases are measured again, said).
// Errors (usage): an unfinished one measured a tarball that has changed.
func priorPhase(su *Setup, key string, sides map[string]measure.Side) (*store.Session, []session.Event, error) {
	st := su.Store
	prior, err := st.ByKey(store.KindStart, key)
	switch {
	case err != nil:
		return nil, nil, With(Failure, err)
	case prior == nil || prior.State != store.Running && prior.State != store.Done:
		return nil, nil, nil // none, or failed or reset: begun again
	}
	events, err := st.Events(prior.ID)
	if err != nil {
		return nil, nil, With(Failure, err)
	}
	changed, err := changedTarball(events, sides)
	switch {
	case err != nil:
		return nil, nil, With(Failure, err)
	case changed != nil && prior.State != store.Done:
		return nil, nil, usageError("the runs of %s that session %d stored were measured from another %s (its size or time has changed since): put that one back and resume, or end the session with perfbisect reset and start again",
			changed.Name, prior.ID, changed.Tarball.Path)
	case changed != nil:
		// Its answer is the old tarball's: the releases are measured
		// again, in a session of their own.
		fmt.Fprintf(su.Log, "releases: %s has changed since session %d measured it: measuring the releases again\n", changed.Tarball.Path, prior.ID)
		return nil, nil, nil
	case prior.State == store.Done:
		n, _ := st.RunCount(prior.ID)
		fmt.Fprintf(su.Log, "releases: session %d did them (%s): its answer is taken from the store, nothing measured again\n", prior.ID, Counted(n, "run"))
	}
	return prior, events, nil
}

// changedTarball is the release (its side) whose stored runs, among
// events, were measured from another content of its tarball than the one
// there now (replaced under the same name), or nil: read with the new
// one's, they would mix two servers as one.
func changedTarball(events []session.Event, sides map[string]measure.Side) (*measure.Side, error) {
	now := map[string]string{} // commit -> its tarball's key, read once
	for _, e := range events {
		side, ok := sides[e.Commit]
		if e.Run == nil || !ok || side.Tarball == nil {
			continue
		}
		key, read := now[e.Commit]
		if !read {
			var err error
			if key, err = side.Tarball.Key(); err != nil {
				return nil, err
			}
			now[e.Commit] = key
		}
		if was := e.Run.Facts[measure.FactTarball]; was != "" && was != key {
			return &side, nil
		}
	}
	return nil, nil
}

// narrowed is what the first phase gives the second: the releases it
// narrowed to (good, bad), the identity key the second phase records it
// by, and the document's account of it.
type narrowed struct {
	good, bad string
	key       string
	doc       *report.Releases
}

// narrowByReleases runs a bisection's first phase (cfg: the search over
// good..bad) when su.Build.Binaries serves releases between good and bad:
// a search over the chain of releases on their tarballs, stored as a
// session of its own (resumed, or replayed once done, by the same
// command). It returns the releases the search goes on between from
// source (nil: no first phase; said why), or the bisection's outcome when
// it ends here (no regression between the releases, an error).
func narrowByReleases(ctx context.Context, su *Setup, req StartRequest, cfg session.Config) (*narrowed, error) {
	if bins := su.Build.Binaries; len(bins.Unread)+len(bins.Elsewhere) > 0 {
		var left []string
		if len(bins.Unread) > 0 {
			left = append(left, "not in a vendor's form ("+strings.Join(bins.Unread, ", ")+")")
		}
		if len(bins.Elsewhere) > 0 {
			left = append(left, "for another machine ("+strings.Join(bins.Elsewhere, ", ")+")")
		}
		fmt.Fprintf(su.Log, "--binaries: left alone in %s: %s; a vendor's name reads like mariadb-10.0.22-linux-x86_64.tar.gz\n", bins.Dir, strings.Join(left, "; "))
	}
	chain, sides, why, err := releaseChain(su, cfg.Good, cfg.Bad, cfg.Commits)
	if err != nil {
		return nil, With(Failure, err)
	}
	if chain == nil {
		fmt.Fprintf(su.Log, "%s: %s: building from source\n", "--binaries", why)
		return nil, nil
	}
	c1 := cfg
	c1.Commits, c1.FirstParent, c1.Replay = nil, false, nil
	for i := len(chain) - 1; i > 0; i-- { // newest first, as a range is
		c1.Commits = append(c1.Commits, bisect.Commit{Hash: chain[i], Subject: sides[chain[i]].Name, Parents: []string{chain[i-1]}})
	}
	identity := releaseIdentity(su, c1, chain, sides)
	key := identity.Key()
	st := su.Store
	cur, err := st.Current(store.KindStart)
	if err != nil {
		return nil, With(Failure, err)
	}
	if cur != nil && cur.Key != key && cur.Identity()[store.KeyNarrowedFrom] != key {
		// Another session is unfinished: it goes on as it began, or
		// resumable refuses this start.
		fmt.Fprintf(su.Log, "--binaries: session %d is unfinished in %s and was not begun on these releases: it goes on as it began, from source, or is refused (perfbisect reset ends it; then this command bisects the releases first)\n", cur.ID, su.StateDir)
		return nil, nil
	}
	prior, replay, err := priorPhase(su, key, sides)
	if err != nil {
		return nil, err
	}
	c1.Replay = replay
	var names []string
	for _, c := range chain {
		names = append(names, sides[c].Name)
	}
	fmt.Fprintf(su.Log, "releases first, on their binary tarballs (nothing built): %s\n", strings.Join(names, " "))
	var sess *store.Session = prior
	saved := su.Sides
	su.Sides = sides
	defer func() { su.Sides = saved }()
	subjects := func(h string) string { return sides[h].Name }
	table := &report.Table{W: req.Out, Subjects: subjects, Metric: c1.Metric, Color: req.Color}
	var res *session.Result
	su.StoreSession(&c1, func() int64 { return sess.ID }, 0, 0, func(s session.Step) { table.Step(s, res.Runs) })
	run, err := session.New(c1, su.Measurer(func() int64 { return sess.ID }))
	if err != nil {
		return nil, With(Usage, err)
	}
	if sess == nil {
		dir, _ := os.Getwd()
		if sess, err = su.Begin(store.KindStart, req.Args, dir, c1.Good, c1.Bad, identity); err != nil {
			return nil, With(Failure, err)
		}
	}
	res = run.Result()
	_, runErr := run.Run(ctx)
	doc := report.NewDocument(res, c1.Metric, subjects)
	doc.Place(c1.Good, c1.Bad, c1.Commits)
	doc.Search = c1.Search
	doc.Workload = su.Workload.Summary()
	title := "perfbisect: bisection " + req.Good + ".." + req.Bad + " (releases on binary tarballs)"
	if runErr != nil {
		doc.Result, doc.Error = "error", runErr.Error()
		if ctx.Err() != nil {
			doc.Error = "interrupted"
		}
		su.writeBisection(req.Output, doc, sess.ID, title)
		var ee *session.EndpointError
		if errors.As(runErr, &ee) && ctx.Err() == nil {
			_ = st.End(sess.ID, store.Failed, "error", doc) // resuming would only repeat it
		}
		return nil, SessionError(runErr, ctx.Err() != nil, su.StateDir, su.RepoRoot)
	}
	rd := &report.Releases{Session: sess.ID, Releases: names, Runs: res.Measured, Outcome: string(res.Outcome)}
	parent := map[string]string{}
	for i := 1; i < len(chain); i++ {
		parent[chain[i]] = chain[i-1]
	}
	var good, bad string
	switch res.Outcome {
	case session.Found:
		good, bad = parent[res.FirstBad], res.FirstBad
	case session.Ambiguous:
		good, bad = parent[res.Range[len(res.Range)-1]], res.Range[0]
	}
	if good != "" {
		rd.Good, rd.Bad = sides[good].Name, sides[bad].Name
	}
	doc.Releases, doc.Tarballs = rd, true
	if sess.State != store.Done {
		if err := st.End(sess.ID, store.Done, string(res.Outcome), doc); err != nil {
			fmt.Fprintf(os.Stderr, "perfbisect: %v\n", err)
		}
	}
	if good == "" {
		var measured []string
		for _, c := range chain {
			if len(res.Runs[c]) > 0 {
				measured = append(measured, sides[c].Name)
			}
		}
		su.writeBisection(req.Output, doc, sess.ID, title)
		report.Final(req.Out, res, subjects)
		fmt.Fprintf(req.Out, "(measured on the vendors' binary tarballs of %s; without --binaries the releases are built from source)\n", strings.Join(measured, ", "))
		if res.Outcome == session.NoRegression {
			return nil, Answer(NoRegression)
		}
		return nil, Answer(Undecided)
	}
	fmt.Fprintf(req.Out, "first bad release on the vendors' binaries: %s (good: %s), %s; going on from source between them\n",
		rd.Bad, rd.Good, Counted(res.Measured, "run"))
	return &narrowed{good: good, bad: bad, key: key, doc: rd}, nil
}
