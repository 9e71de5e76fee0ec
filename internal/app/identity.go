package app

import (
	"fmt"
	"maps"
	"strings"

	"github.com/perfbisect/perfbisect/bisect/session"
	"github.com/perfbisect/perfbisect/bisect/store"
)

// This file is the one place that writes a session's identity (the keys
// are declared in store); what each command adds is a function here.

// Identity lists everything that shapes a session's answer, by name: the
// endpoints, the decision policy, the workload, the build recipe and the
// option file's content, plus extra (keys of store). Two sessions with
// equal identities may share stored runs; a difference is shown to the
// user by name.
func (s *Setup) Identity(good, bad string, extra map[string]string) store.Identity {
	id := store.Identity{
		store.KeyGood: good, store.KeyBad: bad,
		store.KeyRepeats:    fmt.Sprint(s.Policy.Repeats),
		store.KeyMaxRepeats: fmt.Sprint(s.Policy.MaxRepeats),
		store.KeyThreshold:  fmt.Sprint(s.Policy.Threshold),
		store.KeyConfidence: fmt.Sprint(s.Policy.Confidence),
		store.KeyMetric:     string(s.Policy.Metric),
		store.KeyFind:       map[bool]string{false: "regression", true: "improvement"}[s.Policy.Improvement],
		store.KeyRecipe:     s.Build.Recipe.Hash(),
		store.KeyMyCnf:      s.OptionFile.Path,
	}
	// The workload as one value (for matching runs of earlier sessions) and
	// field by field (so that a refusal names the flag that changed).
	maps.Copy(id, s.Workload.Identity())
	if s.FreshDatadir {
		id[store.KeyFreshDatadir] = "true"
	}
	if s.Build.Layouts != 1 {
		id[store.KeyLayouts] = s.Build.layoutsText()
	}
	// Placement changes the numbers: runs with another one are not reused.
	if !s.ServerCPUs.IsZero() {
		id[store.KeyServerCPUs] = s.ServerCPUs.String()
	}
	if !s.ClientCPUs.IsZero() {
		id[store.KeyClientCPUs] = s.ClientCPUs.String()
	}
	if len(s.Runners) > 0 {
		var names []string
		for _, h := range s.Runners {
			names = append(names, h.Name)
		}
		id[store.KeyRunners] = strings.Join(names, " ")
	}
	if !s.OptionFile.IsZero() {
		// The file and every file it includes: what the server will read.
		id[store.KeyMyCnfContent] = s.OptionFile.ShortDigest()
	}
	maps.Copy(id, extra)
	return id
}

// startIdentity is a start session's identity: Setup.Identity with the
// search and its settings as cfg has them (cfg's confidence, which a
// resumed classic session keeps), and what it does with documentation-only
// commits (docs false: a session begun before they were left out, which
// has no such key). The classic search adds no "search" entry, so that a
// session begun before the probabilistic search existed has the same
// identity.
func startIdentity(su *Setup, cfg session.Config, good, bad string, keepDocs, docs bool) store.Identity {
	extra := map[string]string{store.KeyNoConfirm: fmt.Sprint(cfg.NoConfirm), store.KeyRepo: su.RepoRoot,
		store.KeyFirstParent: fmt.Sprint(cfg.FirstParent), store.KeyJobs: fmt.Sprint(cfg.Jobs),
		store.KeyConfidence: fmt.Sprint(cfg.Confidence)}
	if cfg.Search != session.SearchClassic {
		extra[store.KeySearch] = cfg.Search
		extra[store.KeyMaxRuns] = fmt.Sprint(cfg.MaxRuns)
	}
	if docs {
		extra[store.KeyDocCommits] = map[bool]string{true: "kept", false: "left out"}[keepDocs]
	}
	return su.Identity(good, bad, extra)
}

// pairIdentity is the identity of the session comparing head with base at
// su.Workload's threads: a plain pair's as compare always stored it, with
// what each other side stands for.
func pairIdentity(su *Setup, base, head Side) store.Identity {
	extra := map[string]string{store.KeyCommand: "compare", store.KeyRepo: su.RepoRoot}
	for name, sd := range map[string]Side{store.KeyBaseSide: base, store.KeyHeadSide: head} {
		if !sd.Plain() {
			extra[name] = sd.Describe()
		}
	}
	return su.Identity(base.Key, head.Key, extra)
}

// scanIdentity is a scan's identity: its range, step, merges and runs.
func scanIdentity(su *Setup, from, to string, every int, merges bool, runs int) store.Identity {
	return su.Identity(from, to, map[string]string{store.KeyCommand: "scan", store.KeyRepo: su.RepoRoot,
		store.KeyEvery: fmt.Sprint(every), store.KeyMerges: fmt.Sprint(merges), store.KeyRuns: fmt.Sprint(runs)})
}

// runIdentity is the identity of a perfbisect run session (git bisect run).
func runIdentity(su *Setup, good, bad string) store.Identity {
	return su.Identity(good, bad, map[string]string{store.KeyRepo: su.RepoRoot})
}
