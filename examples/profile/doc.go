// Command profile measures one configuration of a job on a GPU node and
// writes its profile to a profile store, so that elastico schedules the job
// from its own measurements.
//
//	profile -family resnet50 -config-id bs256-amp -batch 256 -amp \
//	    -source dcgm -dcgm-url http://localhost:9400/metrics -gpu 0 \
//	    -store ./profiles -- python train.py --model resnet50
//
// The command runs alone on the GPU(s), with its configuration in the
// environment (ELASTICO_BATCH_SIZE, ELASTICO_AMP, ELASTICO_CHECKPOINTING,
// ELASTICO_GPUS, ELASTICO_KV_CACHE_FRAC, ELASTICO_MAX_SEQS, ELASTICO_CONFIG_ID,
// CUDA_VISIBLE_DEVICES), and reports its progress on standard output after
// each iteration:
//
//	print(f"elastico-progress iter={step} work={step * batch_size}", flush=True)
//
// (work is cumulative samples for training, tokens or requests for
// inference). The profiler warms it up, samples it every second over the
// window, stops it, prints the profile as JSON and adds it to the store
// (<store>/<family>.profiles.json).
//
// Sources: -source dcgm reads a dcgm-exporter endpoint (run it with
// -c 1000 -f /etc/dcgm-exporter/dcp-metrics-included.csv; see package
// profiler/dcgm); -source nvml reads NVML directly (a binary built with
// cgo). -gpu takes one device per replica, comma-separated: an index or a
// UUID, or for dcgm a MIG instance (0/13) or a pod (pod:ns/name).
package main
