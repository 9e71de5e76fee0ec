// Package stats decides whether two sets of runs differ, and where a candidate
// revision sits between a good and a bad one, under noise. It does no I/O and
// imports nothing of perfbisect's.
//
// The unit of data is a run: one number per server start (tps, qps, a latency
// percentile, or CPU time per transaction). The verdicts' tests are rank-based
// and assume nothing about the distribution of runs (benchmark results are
// skewed and heavy-tailed); Fieller's interval, reported as evidence, works on
// means:
//   - MannWhitney (utest.go): two-sided Mann-Whitney U p-value, exact null
//     distribution for small samples (github.com/aclements/go-moremath, as used by
//     benchstat).
//   - Shift (shift.go): Hodges-Lehmann estimate of the relative shift between two
//     samples with its distribution-free (Moses) confidence interval.
//   - Compare (compare.go): the three-way DIFFERENT / SAME / UNKNOWN decision with
//     an effect-size threshold.
//   - Classify (classify.go): a candidate measured in blocks with good and bad,
//     tested against the per-block midpoint.
//   - Budget (budget.go): how the session's error is split over its decisions.
//   - Design, Plan, Power (design.go): the group-sequential plan of one decision
//     (looks, alpha spent per look) chosen from the endpoints' shift and noise,
//     with the Mann-Whitney test's power and the expected runs.
//   - KolmogorovSmirnov (ks.go): two-sample Kolmogorov-Smirnov test (any
//     difference of distributions), exact permutation p-value (also with ties)
//     for n1*n2 <= 1e6, the Kolmogorov limit beyond.
//   - MedianCI (median.go): distribution-free confidence interval of the median
//     from order statistics (binomial, equal-tailed).
//   - Fieller and Position (fieller.go): Fieller's interval for a ratio of means of
//     paired observations, and with it where a candidate sits between good and bad
//     in blocks (on means: exact for normal runs, approximate otherwise; Student t
//     quantiles from gonum.org/v1/gonum).
//   - ChangePoints (changepoint.go): where a series of per-commit runs shifted
//     (Apache Otava's split and merge over E-divisive candidates, with
//     Mann-Whitney p-values corrected for the choice of position), to supply
//     good and bad endpoints from a scan.
package stats
