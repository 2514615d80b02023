package placement

import (
	"math"
	"slices"
)

// sortByKey orders items (given in increasing index) by decreasing
// dominant share, then decreasing GPU count, then index.
func (w *work) sortByKey(s []int32) {
	if len(s) >= radixMin {
		w.radixSort(s)
		return
	}
	w.compareSort(s)
}

// compareSort is sortByKey for few items: pdqsort on the keys.
func (w *work) compareSort(s []int32) {
	keys := w.keys[:0]
	for _, i := range s {
		keys = append(keys, sortKey{share: w.keyOf[i], gpus: int32(w.dem[i].GPUs), i: i})
	}
	// Plain comparisons: a share is never NaN (setup sees to it, as the
	// radix sort needs), and cmp.Compare's care for NaNs cost a third of
	// the sort (BenchmarkSortByKey).
	slices.SortFunc(keys, func(a, b sortKey) int {
		switch {
		case a.share > b.share:
			return -1
		case a.share < b.share:
			return 1
		case a.gpus != b.gpus:
			return int(b.gpus - a.gpus)
		}
		return int(a.i - b.i)
	})
	for k := range keys {
		s[k] = keys[k].i
	}
	w.keys = keys
}

// radixMin is the item count from which a radix sort beats pdqsort
// (BenchmarkSortByKey: both take about 22 µs at 512 items; at 1,024 the
// radix sort 37 µs, pdqsort 75).
const radixMin = 512

// radixSort is sortByKey for many items: stable LSD radix passes, first on
// the GPU count, then on the share's bits (a non-negative float64 orders
// as its bits do), each key complemented so that larger comes first; the
// input's index order survives as the last tie-break.
func (w *work) radixSort(s []int32) {
	n := len(s)
	w.rkeys = slices.Grow(w.rkeys[:0], 2*n)[:2*n]
	w.ridx = slices.Grow(w.ridx[:0], n)[:n]
	keys, tmpKeys := w.rkeys[:n], w.rkeys[n:]
	for k, i := range s {
		keys[k] = uint64(^uint32(w.dem[i].GPUs))
	}
	radixPasses(keys, tmpKeys, s, w.ridx, 32)
	for k, i := range s {
		keys[k] = ^math.Float64bits(w.keyOf[i])
	}
	radixPasses(keys, tmpKeys, s, w.ridx, 64)
}

// radixPasses sorts idx by keys (both permuted together), stably, 8 bits
// at a time over the low width bits, skipping digits all keys share.
func radixPasses(keys, tmpKeys []uint64, idx, tmpIdx []int32, width uint) {
	var and, or uint64 = ^uint64(0), 0
	for _, k := range keys {
		and &= k
		or |= k
	}
	for shift := uint(0); shift < width; shift += 8 {
		if (and>>shift)&0xff == (or>>shift)&0xff {
			continue // every key has this digit
		}
		var count [257]int
		for _, k := range keys {
			count[(k>>shift)&0xff+1]++
		}
		for d := 1; d < 257; d++ {
			count[d] += count[d-1]
		}
		for j, k := range keys {
			d := (k >> shift) & 0xff
			tmpKeys[count[d]] = k
			tmpIdx[count[d]] = idx[j]
			count[d]++
		}
		copy(keys, tmpKeys)
		copy(idx, tmpIdx)
	}
}

type sortKey struct {
	share float64
	gpus  int32
	i     int32
}
