package rst

import (
	"math"
	"math/bits"
	"strconv"
	"strings"

	"github.com/elastico/elastico"
)

// LaunchGPU is one GPU a job's replica is placed on, as Launch needs it.
type LaunchGPU struct {
	// Index is the device ordinal as the job's processes see it (after the
	// host has set CUDA_VISIBLE_DEVICES, if it does): the <dev> of
	// CUDA_MPS_PINNED_DEVICE_MEM_LIMIT.
	Index int
	// Memory is the GPU's memory in GiB.
	Memory float64
	// Shared says the GPU runs under MPS with other jobs (elastico.GPU.Shared
	// and a placement that co-locates): only then are MPS limits set.
	Shared bool
}

// Bounds of the PyTorch allocator's max_split_size_mb that Launch sets.
const (
	minSplitMB = 128
	maxSplitMB = 1024
)

// Launch returns what the host must set when it (re)starts job j under
// profile p on the given GPUs (one per replica), as the paper's §4.2 lists:
//
//   - BatchSize, Checkpointing, AMP: p's knobs.
//   - LRScale: [LRScale] from j.ReferenceBatch to p's batch, under
//     j.Optimizer; 1 for inference, and 1 when ReferenceBatch is zero,
//     which State.Validate allows only where nothing is to be scaled (no
//     batch is guessed as the reference: validate the job first).
//   - MemoryFraction = M_j / M_GPU, with M_GPU the smallest memory among the
//     GPUs, so that every replica gets at least M_j; capped at 1. On a
//     larger GPU of a mixed gang the fraction allows more than M_j, and on a
//     shared one the MPS limit below is what protects the neighbours.
//   - MaxNumSeqs: p's maximum number of concurrent sequences (inference).
//   - MaxSplitSizeMB: the budget M_j divided by 16, rounded down to a power
//     of two and kept within [128, 1024] MiB. Under a hard memory cap,
//     fragmentation is what turns a fitting job into an out-of-memory
//     error; blocks that may not be split are then at most a sixteenth of
//     the budget.
//   - MPSPinnedMemLimit: "<dev>=<n>MB" for every shared GPU, n = M_j in MiB
//     rounded up, comma-separated; empty when no GPU is shared.
//   - MPSActiveThreadPercentage: the SM share p.Demand.SM in percent,
//     rounded up, within [1, 100]; 0 when no GPU is shared.
//
// j may be nil (no learning-rate scaling is then known: LRScale is 1); a nil
// p gives the zero LaunchParams. An empty gpus leaves the memory fraction
// and the MPS settings zero.
func Launch(j *elastico.Job, p *elastico.Profile, gpus []LaunchGPU) elastico.LaunchParams {
	if p == nil {
		return elastico.LaunchParams{}
	}
	l := elastico.LaunchParams{
		BatchSize:      p.Config.BatchSize,
		Checkpointing:  p.Config.Checkpointing,
		AMP:            p.Config.AMP,
		LRScale:        1,
		MaxNumSeqs:     p.Config.MaxSeqs,
		MaxSplitSizeMB: maxSplitSize(p.Demand.GPUMemory),
	}
	if j != nil && j.Class == elastico.Training {
		l.LRScale = LRScale(j.Optimizer, j.ReferenceBatch, p.Config.BatchSize)
	}

	smallest := math.Inf(1)
	shared := false
	for _, g := range gpus {
		if g.Memory > 0 {
			smallest = math.Min(smallest, g.Memory)
		}
		shared = shared || g.Shared
	}
	if !math.IsInf(smallest, 1) && p.Demand.GPUMemory > 0 {
		l.MemoryFraction = math.Min(1, p.Demand.GPUMemory/smallest)
	}
	if shared {
		mib := int64(math.Ceil(p.Demand.GPUMemory * 1024))
		var b strings.Builder
		for _, g := range gpus {
			if !g.Shared {
				continue
			}
			if b.Len() > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Itoa(g.Index))
			b.WriteByte('=')
			b.WriteString(strconv.FormatInt(mib, 10))
			b.WriteString("MB")
		}
		l.MPSPinnedMemLimit = b.String()
		l.MPSActiveThreadPercentage = min(100, max(1, int(math.Ceil(p.Demand.SM*100-1e-9))))
	}
	return l
}

// maxSplitSize returns the max_split_size_mb for a budget of gib GiB, or 0
// for no budget.
func maxSplitSize(gib float64) int {
	if !(gib > 0) {
		return 0
	}
	mb := gib * 1024 / 16
	if mb <= minSplitMB {
		return minSplitMB
	}
	if mb >= maxSplitMB {
		return maxSplitMB
	}
	return 1 << (bits.Len(uint(mb)) - 1)
}
