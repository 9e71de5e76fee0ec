package bench

// The random ids of sysbench 0.4.12's oltp test (sysbench/tests/oltp/sb_oltp.c):
// GET_RANDOM_ID() calls one of rnd_func_uniform, rnd_func_gaussian and
// rnd_func_special over [1, --oltp-table-size], chosen by --oltp-dist-type. They
// are integer functions of sb_rnd() (sysbench.h), not the floating-point
// sb_rand.c of sysbench 1.0 (distribution.go), and their results differ: the
// special distribution has its own integer rounding of --oltp-dist-res and puts
// its hot rows at a fixed place. Arithmetic is in uint32 as in the C code
// (unsigned int), so that wrap-arounds of very large tables come out the same.

// sbRndMax is SB_MAX_RND (sysbench.h): sb_rnd() is lrand48() % SB_MAX_RND.
const sbRndMax = 0x3fffffff

// sbRnd is sb_rnd(): a 31-bit lrand48()-like draw (here the top 31 bits of the
// thread's xoroshiro128+ stream, not lrand48's shared sequence) modulo
// SB_MAX_RND, so in [0, 0x3ffffffe].
func (r *Rand) sbRnd() uint32 {
	return uint32(r.Uint64()>>33) % sbRndMax
}

// legacyDist is the distribution GET_RANDOM_ID() draws from, with the options
// parse_arguments reads for it.
type legacyDist struct {
	kind byte   // 'u' uniform, 'g' gaussian, 's' special (--oltp-dist-type)
	size uint32 // --oltp-table-size
	iter uint32 // --oltp-dist-iter
	pct  uint32 // --oltp-dist-pct
	res  uint32 // --oltp-dist-res
}

// legacyDistTypes are the values of --oltp-dist-type sb_oltp.c accepts
// (parse_arguments).
var legacyDistTypes = []string{"uniform", "gaussian", "special"}

// newLegacyDist reads the distribution of o (valid for oltp_legacy): RandType
// is --oltp-dist-type, RandSpecIter/Pct/Res are --oltp-dist-iter/pct/res.
func newLegacyDist(o *Options) legacyDist {
	return legacyDist{
		kind: o.RandType[0],
		size: uint32(o.TableSize),
		iter: uint32(o.RandSpecIter),
		pct:  uint32(o.RandSpecPct),
		res:  uint32(o.RandSpecRes),
	}
}

// id is GET_RANDOM_ID(): a row id from the configured distribution.
func (d *legacyDist) id(r *Rand) uint32 {
	switch d.kind {
	case 'u':
		return d.uniform(r)
	case 'g':
		return d.gaussian(r)
	default:
		return d.special(r)
	}
}

// uniform is rnd_func_uniform: 1 + sb_rnd() % table_size.
func (d *legacyDist) uniform(r *Rand) uint32 {
	return 1 + r.sbRnd()%d.size
}

// gaussian is rnd_func_gaussian: the mean (truncated) of --oltp-dist-iter
// uniform ids, so an approximately normal id centred in the table.
func (d *legacyDist) gaussian(r *Rand) uint32 {
	var sum uint32 // an int in sb_oltp.c; the same bits with two's complement
	for range d.iter {
		sum += 1 + r.sbRnd()%d.size
	}
	return sum / d.iter
}

// special is rnd_func_special. It draws res uniformly from
// [1, table_size * (100 / (100 - dist_res))]: the 100/(100-res) is an integer
// division, so only res values with an integer quotient (75 -> 4, 80 -> 5,
// 90 -> 10) give res% special values; 70 gives 3, two thirds. When res lands
// in the first table_size values (1 in 100/(100-res) draws) the id is gaussian
// (as rnd_func_gaussian). Otherwise it is res modulo d, d = table_size *
// dist_pct / 100 (at least 1), moved to start at table_size/2 - table_size *
// dist_pct / 200: uniform over the d "special" ids just below and above the
// middle of the table. With the defaults (12, 1, 75) three quarters of the
// draws hit the 1% of ids [T/2 - T/200, T/2 + T/200).
func (d *legacyDist) special(r *Rand) uint32 {
	t := d.size
	if t == 0 {
		return 0
	}
	rangeSize := t * (100 / (100 - d.res))
	if rangeSize == 0 {
		// t * 100/(100-res) is a multiple of 2^32: sb_oltp.c divides by zero
		// there. Such tables (2^30 rows with res 99) only get the gaussian part.
		return d.gaussian(r)
	}
	res := 1 + r.sbRnd()%rangeSize
	if res <= t {
		return d.gaussian(r)
	}
	res %= d.hotSize()
	return res + d.hotStart()
}

// hotSize is rnd_func_special's d: how many ids get the special draws.
func (d *legacyDist) hotSize() uint32 {
	return max(d.size*d.pct/100, 1)
}

// hotStart is the first of the special ids: table_size/2 - table_size*pct/200.
func (d *legacyDist) hotStart() uint32 {
	return d.size/2 - d.size*d.pct/(100*2)
}
