package placement

import (
	"math"
	"strconv"
	"strings"

	"github.com/elastico/elastico"
)

// ReasonLoud begins the reason of an item that waits because every GPU
// with room has a neighbour the sharing rule says it may not share with.
const ReasonLoud = "every GPU with room has a neighbour it may not share with: the rule allows "

// why records why item it found no room, in w.rbuf: the reasons of a
// call are formatted into one buffer that becomes one string (thousands of
// items may wait in a large cluster, each with its own numbers).
func (w *work) why(it int32, avoided bool) {
	item := &w.req.Items[it]
	d := &w.dem[it]
	b := w.rbuf
	w.rfrom[it] = int32(len(b))
	w.codes[it] = elastico.Unplaceable
	// In a cluster of several models, say which one the item needs.
	model := ""
	if m := w.imodel[it]; m > 0 && len(w.models) > 1 {
		model = w.models[m-1] + " "
	}
	switch {
	case w.imodel[it] < 0:
		b = append(b, "was profiled for GPU model "...)
		b = append(b, item.Profile.Hardware.GPUModel...)
		b = append(b, "; the cluster has "...)
		b = append(b, strings.Join(w.models, ", ")...)
		b = append(b, " (a profile runs only on GPUs of its Hardware.GPUModel)"...)
	case d.GPUMemory > w.maxGPUMem+1e-9*math.Max(1, w.maxGPUMem):
		b = append(b, "needs "...)
		b = strconv.AppendFloat(b, d.GPUMemory, 'f', 1, 64)
		b = append(b, " GiB of GPU memory per replica; the largest GPU has "...)
		b = strconv.AppendFloat(b, w.maxGPUMem, 'f', 1, 64)
		b = append(b, " GiB"...)
	case d.SM > w.cfg.Oversubscription+w.smTol:
		b = append(b, "needs an SM share of "...)
		b = strconv.AppendFloat(b, d.SM, 'f', 2, 64)
		b = append(b, " per replica; a GPU holds "...)
		b = strconv.AppendFloat(b, w.cfg.Oversubscription, 'f', 2, 64)
	case d.GPUs > len(w.gpus):
		b = append(b, "needs "...)
		b = strconv.AppendInt(b, int64(d.GPUs), 10)
		b = append(b, " GPUs; the cluster has "...)
		b = strconv.AppendInt(b, int64(len(w.gpus)), 10)
	case d.GPUs > 1 && !item.Job.Spread && d.GPUs > w.maxNodeGPUs:
		b = append(b, "needs "...)
		b = strconv.AppendInt(b, int64(d.GPUs), 10)
		b = append(b, " GPUs on one node; the largest node has "...)
		b = strconv.AppendInt(b, int64(w.maxNodeGPUs), 10)
	case avoided:
		b = append(b, "every GPU with room holds a job it must not share a GPU with"...)
	case w.loud:
		w.codes[it] = elastico.Interference
		b = append(b, ReasonLoud...)
		if _, ok := w.req.Predictor.(PairJudge); ok {
			b = append(b, "what the request's judge allows"...)
		} else {
			b = append(b, w.cfg.Sharing.String()...)
		}
	case d.GPUs == 1 || item.Job.Spread && (w.cfg.SpreadAnyway || d.GPUs > w.maxNodeGPUs):
		if d.GPUs == 1 {
			b = append(b, "no "...)
			b = append(b, model...)
			b = append(b, "GPU has "...)
		} else {
			b = append(b, "fewer than "...)
			b = strconv.AppendInt(b, int64(d.GPUs), 10)
			b = append(b, " "...)
			b = append(b, model...)
			b = append(b, "GPUs have "...)
		}
		b = strconv.AppendFloat(b, d.SM, 'f', 2, 64)
		b = append(b, " SM and "...)
		b = strconv.AppendFloat(b, d.GPUMemory, 'f', 1, 64)
		b = append(b, " GiB free on a node with "...)
		b = strconv.AppendFloat(b, d.CPU, 'f', 1, 64)
		b = append(b, " CPU and "...)
		b = strconv.AppendFloat(b, d.RAM, 'f', 1, 64)
		b = append(b, " GiB RAM free"...)
	default:
		fd := float64(d.GPUs)
		b = append(b, "no node has "...)
		b = strconv.AppendInt(b, int64(d.GPUs), 10)
		b = append(b, " "...)
		b = append(b, model...)
		b = append(b, "GPUs with "...)
		b = strconv.AppendFloat(b, d.SM, 'f', 2, 64)
		b = append(b, " SM and "...)
		b = strconv.AppendFloat(b, d.GPUMemory, 'f', 1, 64)
		b = append(b, " GiB free each, and "...)
		b = strconv.AppendFloat(b, fd*d.CPU, 'f', 1, 64)
		b = append(b, " CPU and "...)
		b = strconv.AppendFloat(b, fd*d.RAM, 'f', 1, 64)
		b = append(b, " GiB RAM free"...)
	}
	w.rto[it] = int32(len(b))
	w.rbuf = b
}
