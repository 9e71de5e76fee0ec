// Package stats decides whether two sets of runs differ, and where a candidate
// revision sits between a good and a bad one, under noise. It does no I/O and
// imports nothing of perfbisect's.
//
// The unit of data is a run: one number per server start (tps, or CPU time per
// transaction). Tests are rank-based and assume nothing about the distribution of
// runs (benchmark results are skewed and heavy-tailed):
//   - MannWhitney (utest.go): two-sided Mann-Whitney U p-value, exact null
//     distribution for small samples (github.com/aclements/go-moremath, as used by
//     benchstat).
//   - Shift (shift.go): Hodges-Lehmann estimate of the relative shift between two
//     samples with its distribution-free (Moses) confidence interval.
//   - Compare (compare.go): the three-way DIFFERENT / SAME / UNKNOWN decision with
//     an effect-size threshold.
//   - Classify (classify.go): a candidate measured in blocks with good and bad,
//     tested against the per-block midpoint.
//   - Budget (budget.go): how the session's error is split over steps and looks.
//   - ChangePoints (changepoint.go): where a series of per-commit runs shifted
//     (Apache Otava's split and merge over E-divisive candidates, with
//     Mann-Whitney p-values corrected for the choice of position), to supply
//     good and bad endpoints from a scan.
package stats
