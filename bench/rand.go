package bench

import (
	"math"
	"sync/atomic"
)

// Rand is one stream of sysbench's random numbers: the xoroshiro128+ generator
// sysbench keeps per thread (sb_rand.h), with the distributions of sb_rand.c on
// top (distribution.go). A Rand is not safe for concurrent use; every thread and
// every table load has its own, derived from the seed with NewRand.
type Rand struct {
	s0, s1 uint64
	d      *distParams
}

// Streams: each user of random numbers gets its own stream number, so a stream
// does not depend on how many others exist (rows of table 3 are the same with 1 or
// 16 threads).
const (
	streamPrepare = 1 << 32 // + table number: rows of sbtestN
	streamThread  = 2 << 32 // + thread number: the statements of one thread
	streamUnique  = 3 << 32 // sysbench.rand.unique()'s sequence
)

// NewRand returns the generator for stream of seed, drawing from the distribution
// o.RandType with o's parameters. sysbench seeds each thread's xoroshiro128+ from
// libc random() after srandom(--rand-seed); here the two state words come from
// splitmix64 over (seed, stream), which gives every stream a fixed, independent
// sequence. o must be valid (see Options.Validate).
func NewRand(o Options, seed int64, stream uint64) *Rand {
	x := mixStream(seed, stream)
	r := &Rand{s0: splitmix64(&x), s1: splitmix64(&x), d: newDistParams(o)}
	if r.s0 == 0 && r.s1 == 0 { // the one state xoroshiro cannot leave
		r.s1 = 1
	}
	return r
}

// mixStream combines seed and stream into a splitmix64 state.
func mixStream(seed int64, stream uint64) uint64 {
	return uint64(seed) ^ stream*0xd1342543de82ef95
}

// splitmix64 is Vigna's seeding generator, the one the xoroshiro authors
// recommend for filling the state from a 64-bit seed.
func splitmix64(x *uint64) uint64 {
	*x += 0x9e3779b97f4a7c15
	z := *x
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// Uint64 returns the next xoroshiro128+ output (rotations 55, 14, 36, the version
// sysbench bundles).
func (r *Rand) Uint64() uint64 {
	s0, s1 := r.s0, r.s1
	result := s0 + s1
	s1 ^= s0
	r.s0 = (s0<<55 | s0>>9) ^ s1 ^ s1<<14
	r.s1 = s1<<36 | s1>>28
	return result
}

// Float64 returns a uniform double in [0, 1) built as sysbench does: the top 52
// bits of Uint64 as the mantissa of a number in [1, 2), minus 1.
func (r *Rand) Float64() float64 {
	return math.Float64frombits(0x3FF<<52|r.Uint64()>>12) - 1
}

// String fills template like sysbench.rand.string: every '#' becomes a uniform
// digit, every '@' a uniform lower-case letter, anything else is kept.
func (r *Rand) String(template string) string {
	b := make([]byte, len(template))
	for i := 0; i < len(template); i++ {
		switch template[i] {
		case '#':
			b[i] = byte(r.Uniform('0', '9'))
		case '@':
			b[i] = byte(r.Uniform('a', 'z'))
		default:
			b[i] = template[i]
		}
	}
	return string(b)
}

// uniqueSeq is sysbench.rand.unique(): a sequence of distinct 32-bit values in
// random-looking order (Preshing's quadratic-residue permutation), shared by all
// threads. oltp_insert with --auto-inc=off uses it for ids.
type uniqueSeq struct {
	index  atomic.Uint32
	offset uint32
}

func newUniqueSeq(seed int64) *uniqueSeq {
	x := mixStream(seed, streamUnique)
	v := splitmix64(&x)
	u := &uniqueSeq{offset: permuteQR(permuteQR(uint32(v>>32)) + 0x46790905)}
	u.index.Store(permuteQR(permuteQR(uint32(v)) + 0x682f0161))
	return u
}

// next returns the next value; safe for concurrent use.
func (u *uniqueSeq) next() uint32 {
	i := u.index.Add(1) - 1
	return permuteQR((permuteQR(i) + u.offset) ^ 0x5bf03635)
}

// permuteQR is a bijection of uint32 based on quadratic residues modulo the
// largest 32-bit prime (4294967291 = 3 mod 4).
func permuteQR(x uint32) uint32 {
	const prime = 4294967291
	if x >= prime {
		return x // the 5 values above the prime map to themselves
	}
	residue := uint32(uint64(x) * uint64(x) % prime)
	if x <= prime/2 {
		return residue
	}
	return prime - residue
}
