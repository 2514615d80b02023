package pds

import (
	"math"
	"slices"

	"github.com/elastico/elastico"
)

// predCache keeps an immutable predictor's answers from one epoch to the
// next. Most of an epoch's predictions are about pairs that already shared
// a GPU in the last one (Γ prices every running pair); asking the model
// again cost a sixth of an epoch at 20,000 jobs and a third at 500.
//
// A profile is known by its contents: interning gives equal profiles (==)
// one number, whichever job or epoch they come from, and a pair of numbers
// keys the answer. A profile that changed gets a new number, so an answer
// is only ever reused for the very profiles it was computed for: the cache
// changes how long an epoch takes, never its plan. (== takes +0 and −0 for
// equal; iac's features treat them alike.) Only a predictor known to be
// immutable is cached (see cacheable): one the host retrains between
// epochs is asked afresh every epoch.
//
// The pairs the cache does not know are mostly new ones (a waiting job's
// search meets new neighbours every epoch), but their profiles are not:
// a predictor that prepares profiles (preparer, as iac.MLP does) gets each
// one prepared once, kept with its number, and answers a pair from the
// two, for the same answer at two thirds of the cost.
//
// The cache lives in the Scheduler's spare epoch: a concurrent Epoch
// starts with an empty one. It is bounded: when it holds many more
// profiles than the last epoch asked about, those it did not are dropped,
// with their pairs.
type predCache struct {
	ids   map[profileKey]*interned
	pairs map[uint64]float64
	next  uint32 // the last number given
	epoch uint32 // stamps the profiles asked about in an epoch
	used  int    // profiles stamped this epoch
	// With a predictor that prepares profiles (preparer), each profile
	// is prepared once, the first time a pair it is in is not known:
	// prep holds the prepared profiles, plen values each, in blocks of
	// prepBlock (a block never moves, so growing never copies what is
	// there), and at[id] is 1 + the place of profile id's (0: not
	// prepared yet).
	prep [][]float64
	at   []uint32
	n    int // profiles prepared
	plen int
}

// prepBlock is how many prepared profiles a block holds.
const prepBlock = 512

// preparer is a predictor that can prepare a profile once for all the
// pairs it is in, and answer from two prepared profiles what Slowdown
// would (*iac.MLP: its share of the first layer, computed once, saves
// half of each prediction).
type preparer interface {
	PreparedLen() int
	AppendPrepared(dst []float64, p *elastico.Profile) []float64
	SlowdownPrepared(victim, aggressor []float64) (float64, error)
}

// prepared returns profile id (p) prepared by pr.
func (c *predCache) prepared(id uint32, p *elastico.Profile, pr preparer) []float64 {
	if int(id) < len(c.at) && c.at[id] != 0 {
		return c.preparedAt(int(c.at[id]) - 1)
	}
	if int(id) >= len(c.at) {
		c.at = append(c.at, make([]uint32, int(id)+1-len(c.at))...)
	}
	c.plen = pr.PreparedLen()
	b := c.block()
	c.prep[b] = pr.AppendPrepared(c.prep[b], p)
	return c.added(id)
}

// block returns the block the next prepared profile goes to.
func (c *predCache) block() int {
	b := c.n / prepBlock
	if b == len(c.prep) {
		c.prep = append(c.prep, make([]float64, 0, prepBlock*c.plen))
	}
	return b
}

// added numbers the profile just appended id and returns it.
func (c *predCache) added(id uint32) []float64 {
	c.n++
	c.at[id] = uint32(c.n)
	return c.preparedAt(c.n - 1)
}

// keep adds an already prepared profile as number id (id < len(c.at)).
func (c *predCache) keep(id uint32, prepared []float64) {
	b := c.block()
	c.prep[b] = append(c.prep[b], prepared...)
	c.added(id)
}

// preparedAt returns the k-th prepared profile.
func (c *predCache) preparedAt(k int) []float64 {
	i := k % prepBlock * c.plen
	return c.prep[k/prepBlock][i : i+c.plen : i+c.plen]
}

// profileKey is a cheap fingerprint of a profile: the numbers that set
// one apart (hashing its names as well cost a third of what interning
// saves); the interned copy decides. Distinct profiles sharing one only
// take turns in the cache.
type profileKey uint64

func keyOf(p *elastico.Profile) profileKey {
	h := uint64(p.Config.BatchSize)
	for _, x := range [...]float64{p.Throughput, p.Demand.GPUMemory, p.Demand.SM, p.Params, p.Counters.Values[elastico.SMActive], p.Counters.Values[elastico.DRAMActive]} {
		h = (h ^ math.Float64bits(x)) * 1099511628211
		h ^= h >> 29
	}
	return profileKey(h)
}

type interned struct {
	p     elastico.Profile
	id    uint32
	stamp uint32
}

// cacheable reports whether p's answers depend on the two profiles alone
// and never change (elastico.StablePredictor, as the default iac.MLP is).
func cacheable(p elastico.Predictor) bool {
	_, ok := p.(elastico.StablePredictor)
	return ok
}

// The cache is swept when it holds more than sweepFactor times the
// profiles the last epoch asked about, plus sweepSlack; its pairs are
// cleared when they number more than pairFactor per profile kept.
const (
	sweepFactor = 2
	sweepSlack  = 4096
	pairFactor  = 16
)

// begin starts an epoch of n jobs: it sweeps the cache if the last epochs
// left it too large.
func (c *predCache) begin(n int) {
	if c.ids == nil {
		// Sized for a first epoch: about a profile and a pair per job.
		c.ids = make(map[profileKey]*interned, n)
		c.pairs = make(map[uint64]float64, 2*n)
	}
	last := c.used
	c.used = 0
	c.epoch++
	if len(c.ids) <= sweepFactor*last+sweepSlack && c.next < math.MaxUint32/2 {
		return
	}
	// Keep the profiles the last epoch asked about, renumbered from 1, and
	// the pairs among them.
	renum := make(map[uint32]uint32, last)
	kept := predCache{plen: c.plen} // the prepared profiles kept
	if c.at != nil {
		kept.at = make([]uint32, last+1)
	}
	for k, in := range c.ids {
		if in.stamp != c.epoch-1 {
			delete(c.ids, k)
			continue
		}
		id := uint32(len(renum) + 1)
		renum[in.id] = id
		if int(in.id) < len(c.at) && c.at[in.id] != 0 {
			kept.keep(id, c.preparedAt(int(c.at[in.id])-1))
		}
		in.id = id
	}
	c.prep, c.at, c.n = kept.prep, kept.at, kept.n
	c.next = uint32(len(renum))
	old := c.pairs
	c.pairs = make(map[uint64]float64, len(old))
	for k, s := range old {
		v, okV := renum[uint32(k>>32)]
		a, okA := renum[uint32(k)]
		if okV && okA {
			c.pairs[uint64(v)<<32|uint64(a)] = s
		}
	}
	if len(c.pairs) > pairFactor*len(renum)+sweepSlack {
		clear(c.pairs)
	}
}

// id returns p's number, interning it if its contents are new.
func (c *predCache) id(p *elastico.Profile) uint32 {
	k := keyOf(p)
	in := c.ids[k]
	if in == nil || in.p != *p {
		c.next++
		in = &interned{p: *p, id: c.next}
		c.ids[k] = in
	}
	if in.stamp != c.epoch {
		in.stamp = c.epoch
		c.used++
	}
	return in.id
}

// clone returns a copy of c (for the benchmark: every measured epoch
// starts from the same cache).
func (c *predCache) clone() *predCache {
	d := *c
	d.ids = make(map[profileKey]*interned, len(c.ids))
	for k, in := range c.ids {
		cp := *in
		d.ids[k] = &cp
	}
	d.pairs = make(map[uint64]float64, len(c.pairs))
	for k, s := range c.pairs {
		d.pairs[k] = s
	}
	d.prep = make([][]float64, len(c.prep))
	for b := range c.prep {
		d.prep[b] = append(make([]float64, 0, cap(c.prep[b])), c.prep[b]...)
	}
	d.at = slices.Clone(c.at)
	return &d
}
