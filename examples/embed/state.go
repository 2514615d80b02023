package main

import (
	"fmt"

	"github.com/elastico/elastico"
)

// cluster is one node of four 80 GiB GPUs, one job per GPU (no MPS).
func cluster() elastico.Cluster {
	n := elastico.Node{ID: "node-a", CPU: 64, RAM: 512}
	for i := range 4 {
		n.GPUs = append(n.GPUs, elastico.GPU{ID: fmt.Sprintf("node-a/gpu%d", i), Model: "A100-80GB", Memory: 80})
	}
	return elastico.Cluster{Nodes: []elastico.Node{n}}
}

// trainer is a family of two configurations: two GPUs, or one GPU at half
// the batch (rst would build it from measurements).
func trainer(id, model string, opt elastico.Optimizer) elastico.Job {
	p := func(cfg string, gpus, batch int, tput float64) elastico.Profile {
		return elastico.Profile{
			Family: model, Config: elastico.Configuration{ID: cfg, BatchSize: batch, GPUs: gpus},
			Demand:     elastico.Demand{GPUs: gpus, SM: 1, GPUMemory: 30, CPU: 8, RAM: 32},
			Throughput: tput, Efficiency: 1,
		}
	}
	return elastico.Job{ID: id, Optimizer: opt, ReferenceBatch: 256,
		Profiles: []elastico.Profile{p("2xA100", 2, 256, 180), p("1xA100", 1, 128, 110)}}
}

func training() []elastico.Job {
	return []elastico.Job{trainer("resnet50", "resnet50", elastico.SGD), trainer("bert", "bert-large", elastico.Adam)}
}

// service is an inference job (a vLLM server) with twice a trainer's weight.
func service(id string) elastico.Job {
	return elastico.Job{ID: id, Class: elastico.Inference, Weight: 2, Profiles: []elastico.Profile{{
		Family: "llama-8b", Class: elastico.Inference,
		Config:     elastico.Configuration{ID: "kv60", KVCacheFrac: 0.6, MaxSeqs: 128, GPUs: 1},
		Demand:     elastico.Demand{GPUs: 1, SM: 1, GPUMemory: 60, CPU: 4, RAM: 32},
		Throughput: 2000,
	}}}
}
