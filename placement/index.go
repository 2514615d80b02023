package placement

import "math/bits"

// The index buckets GPUs with room left by free memory (rows) and free SM
// share (columns). Best fit walks rows upward from the item's memory demand
// and, in each row, columns upward from its SM demand, so the first bucket
// with a fitting GPU leaves the least memory (then SM) free, give or take
// one bucket. Bitmaps skip empty buckets in O(1).
const (
	memLevels = 64
	smLevels  = 16
)

type index struct {
	// byModel: the index of one GPU model's GPUs, which keeps its places
	// in gpu.mcell and gpu.mpos (the index of all GPUs keeps them in
	// gpu.cell and gpu.pos).
	byModel bool
	qm, qs  float64 // bucket widths: GiB per row, SM share per column
	rows    uint64  // bit lm: row lm has a non-empty bucket
	rowMask [memLevels]uint16
	cells   [memLevels * smLevels][]int32 // GPU numbers
}

// level returns the bucket of v for width q among n, clamping at both ends.
func level(v, q float64, n int) int {
	if !(v > 0) {
		return 0
	}
	f := v / q
	if f >= float64(n-1) {
		return n - 1
	}
	return int(f)
}

func (x *index) reset(qm, qs float64) {
	x.qm, x.qs = qm, qs
	x.rows = 0
	x.rowMask = [memLevels]uint16{}
	for i := range x.cells {
		x.cells[i] = x.cells[i][:0]
	}
}

func (x *index) cellOf(freeSM, freeMem float64) int32 {
	return int32(level(freeMem, x.qm, memLevels)*smLevels + level(freeSM, x.qs, smLevels))
}

// slot returns where GPU g's place in x is kept.
func (x *index) slot(gs []gpu, g int32) (cell, pos *int32) {
	if x.byModel {
		return &gs[g].mcell, &gs[g].mpos
	}
	return &gs[g].cell, &gs[g].pos
}

func (x *index) insert(gs []gpu, g int32) {
	gp := &gs[g]
	c := x.cellOf(gp.freeSM, gp.freeMem)
	cell, pos := x.slot(gs, g)
	*cell = c
	*pos = int32(len(x.cells[c]))
	x.cells[c] = append(x.cells[c], g)
	lm, ls := int(c)/smLevels, int(c)%smLevels
	x.rowMask[lm] |= 1 << ls
	x.rows |= 1 << lm
}

func (x *index) remove(gs []gpu, g int32) {
	cell, pos := x.slot(gs, g)
	c := *cell
	if c < 0 {
		return
	}
	s := x.cells[c]
	last := int32(len(s) - 1)
	if *pos != last {
		moved := s[last]
		s[*pos] = moved
		_, mpos := x.slot(gs, moved)
		*mpos = *pos
	}
	x.cells[c] = s[:last]
	*cell, *pos = -1, -1
	if last == 0 {
		lm, ls := int(c)/smLevels, int(c)%smLevels
		x.rowMask[lm] &^= 1 << ls
		if x.rowMask[lm] == 0 {
			x.rows &^= 1 << lm
		}
	}
}

// cursor walks the GPUs that may hold a demand, bucket by bucket in
// best-fit order; within a bucket, from the most recently inserted. The
// index must not change while a cursor is in use.
//
// Buckets on the demand's own row or column hold GPUs on both sides of it;
// a capped cursor looks at no more than boundaryCap of those (and says so
// in skipped), so that a crowd of near misses does not cost a scan each.
type cursor struct {
	x       *index
	dlm     int
	dls     int
	rows    uint64
	lm      int
	mask    uint16
	cell    int
	s       []int32
	k, stop int
	capped  bool
	skipped bool
}

const boundaryCap = 2

func (x *index) cursor(sm, mem float64, capped bool) cursor {
	dlm := level(mem, x.qm, memLevels)
	dls := level(sm, x.qs, smLevels)
	return cursor{x: x, dlm: dlm, dls: dls, rows: x.rows >> dlm << dlm, cell: -1, k: -1, stop: -1, capped: capped}
}

// next returns the next GPU and its bucket, or -1 when there is none.
func (c *cursor) next() (int32, int) {
	for c.k <= c.stop {
		if c.k >= 0 {
			c.skipped = true // the cap cut this bucket short
		}
		for c.mask == 0 {
			if c.rows == 0 {
				return -1, -1
			}
			c.lm = bits.TrailingZeros64(c.rows)
			c.rows &^= 1 << c.lm
			c.mask = c.x.rowMask[c.lm] >> c.dls << c.dls
		}
		ls := bits.TrailingZeros16(c.mask)
		c.mask &^= 1 << ls
		c.cell = c.lm*smLevels + ls
		c.s = c.x.cells[c.cell]
		c.k = len(c.s) - 1
		c.stop = -1
		if c.capped && (c.lm == c.dlm || ls == c.dls) {
			c.stop = max(-1, c.k-boundaryCap)
		}
	}
	g := c.s[c.k]
	c.k--
	return g, c.cell
}
