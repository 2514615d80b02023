package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/elastico/elastico/examples/kubernetes/annotation"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The test's cluster: three GPU nodes and one without GPUs. GPU memory and
// product come in the labels NVIDIA's gpu-feature-discovery sets;
// elastico.io/gpu-sharing=mps says an MPS daemon lets jobs share the GPUs.
type nodeSpec struct {
	name    string
	gpus    int
	memMiB  int
	product string
	sharing string // "" (no label), "mps", "none"
	cpu     string
	mem     string
}

var testNodes = []nodeSpec{
	{"gpu-a", 4, 40960, "NVIDIA-A100-SXM4-40GB", "mps", "64", "512Gi"},
	{"gpu-b", 2, 40960, "NVIDIA-A100-SXM4-40GB", "none", "32", "256Gi"},
	{"gpu-c", 2, 16384, "Tesla-V100-SXM2-16GB", "mps", "32", "128Gi"},
	{"cpu-1", 0, 0, "", "", "16", "64Gi"},
}

func createNodes(t *testing.T, cs kubernetes.Interface, nodes []nodeSpec) {
	t.Helper()
	for _, n := range nodes {
		if _, err := cs.CoreV1().Nodes().Create(context.Background(), nodeObject(n), metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating node %s: %v", n.name, err)
		}
	}
}

// nodeObject is the Node of n, Ready, with its GPUs allocatable.
func nodeObject(n nodeSpec) *v1.Node {
	rl := v1.ResourceList{v1.ResourceCPU: resource.MustParse(n.cpu), v1.ResourceMemory: resource.MustParse(n.mem), v1.ResourcePods: resource.MustParse("110")}
	labels := map[string]string{"kubernetes.io/hostname": n.name}
	if n.gpus > 0 {
		rl["nvidia.com/gpu"] = *resource.NewQuantity(int64(n.gpus), resource.DecimalSI)
		labels[annotation.GPUMemoryLabel] = fmt.Sprint(n.memMiB)
		labels[annotation.GPUProductLabel] = n.product
	}
	if n.sharing != "" {
		labels[annotation.SharingLabel] = n.sharing
	}
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name, Labels: labels},
		Status: v1.NodeStatus{Capacity: rl, Allocatable: rl, Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}}}}
}

// Families. The numbers are illustrative, of the size RST measures on A100s
// (throughput in samples/s for training, tokens or requests/s for
// inference); the test checks the controller and the plugin, not them.
func cfg(id string, batch, gpus int, sm, mem, thr float64) annotation.ProfileSpec {
	return annotation.ProfileSpec{ID: id, BatchSize: batch, GPUs: gpus, SM: sm, GPUMemoryGiB: mem, CPU: 2, RAMGiB: 8, Throughput: thr,
		Counters: map[string]float64{"sm_active": sm * 0.85, "dram_active": sm * 0.5, "fb_used_frac": min(1, mem/40)}}
}

func amp(p annotation.ProfileSpec) annotation.ProfileSpec  { p.AMP = true; return p }
func ckpt(p annotation.ProfileSpec) annotation.ProfileSpec { p.Checkpointing = true; return p }
func kv(p annotation.ProfileSpec, frac float64, seqs int) annotation.ProfileSpec {
	p.KVCacheFrac, p.MaxSeqs = frac, seqs
	return p
}

type jobSpec struct {
	name string
	spec annotation.JobSpec
}

var trainingJobs = []jobSpec{
	{"resnet50", annotation.JobSpec{Class: "training", Model: "resnet50", Params: 25.6e6, Optimizer: "sgd", ReferenceBatch: 64, Family: []annotation.ProfileSpec{
		cfg("b64", 64, 1, 0.6, 10, 380), amp(cfg("b128-amp", 128, 1, 0.8, 14, 640)), amp(cfg("b256-amp-g2", 256, 2, 0.9, 14, 1180))}}},
	{"bert-large", annotation.JobSpec{Class: "training", Model: "bert-large", Params: 340e6, Optimizer: "adam", ReferenceBatch: 32, Family: []annotation.ProfileSpec{
		ckpt(cfg("b16-ckpt", 16, 1, 0.7, 12, 45)), amp(cfg("b32-amp-g2", 32, 2, 0.9, 22, 130)), amp(cfg("b64-amp-g4", 64, 4, 1, 28, 240))}}},
	{"gpt2-medium", annotation.JobSpec{Class: "training", Model: "gpt2-medium", Params: 355e6, Optimizer: "adam", ReferenceBatch: 8, Family: []annotation.ProfileSpec{
		ckpt(cfg("b8-ckpt", 8, 1, 0.8, 18, 20)), amp(cfg("b16-amp-g2", 16, 2, 0.9, 30, 50))}}},
	{"vgg16", annotation.JobSpec{Class: "training", Model: "vgg16", Params: 138e6, Optimizer: "sgd", ReferenceBatch: 32, Family: []annotation.ProfileSpec{
		cfg("b32", 32, 1, 0.7, 9, 210), amp(cfg("b64-amp", 64, 1, 0.9, 12, 330))}}},
}

var inferenceJobs = []jobSpec{
	{"llama-7b", annotation.JobSpec{Class: "inference", Model: "llama-7b", Params: 7e9, Family: []annotation.ProfileSpec{
		kv(cfg("kv20", 0, 1, 0.3, 18, 900), 0.2, 32), kv(cfg("kv40", 0, 1, 0.45, 26, 1600), 0.4, 96)}}},
	{"llama-13b", annotation.JobSpec{Class: "inference", Model: "llama-13b", Params: 13e9, Family: []annotation.ProfileSpec{
		kv(cfg("kv30", 0, 1, 0.4, 34, 700), 0.3, 48), kv(cfg("tp2-kv30", 0, 2, 0.35, 20, 1200), 0.3, 96)}}},
	{"bert-serve", annotation.JobSpec{Class: "inference", Model: "bert-base", Params: 110e6, Family: []annotation.ProfileSpec{
		cfg("b8", 8, 1, 0.2, 3, 2400), cfg("b32", 32, 1, 0.35, 5, 5200)}}},
	{"whisper", annotation.JobSpec{Class: "inference", Model: "whisper-small", Params: 244e6, Family: []annotation.ProfileSpec{
		cfg("b4", 4, 1, 0.3, 6, 40), cfg("b16", 16, 1, 0.5, 10, 110)}}},
	{"mistral-7b", annotation.JobSpec{Class: "inference", Model: "mistral-7b", Params: 7.2e9, Family: []annotation.ProfileSpec{
		kv(cfg("kv20", 0, 1, 0.35, 20, 1000), 0.2, 48)}}},
}

// giant needs eight GPUs on one node; no node has them.
var giant = jobSpec{"giant", annotation.JobSpec{Class: "training", Model: "llama-70b-ft", Params: 70e9, Optimizer: "adam", Family: []annotation.ProfileSpec{
	amp(cfg("b64-amp-g8", 64, 8, 1, 38, 90))}}}

// v100Only is vgg16 profiled on V100s: gpu-c is the only node it runs on.
var v100Only = jobSpec{"vgg16-v100", annotation.JobSpec{Class: "training", Model: "vgg16", Params: 138e6, Optimizer: "sgd", ReferenceBatch: 32, Family: []annotation.ProfileSpec{
	onV100(cfg("b32", 32, 1, 0.7, 9, 120)), onV100(amp(cfg("b64-amp", 64, 1, 0.9, 12, 190)))}}}

func onV100(p annotation.ProfileSpec) annotation.ProfileSpec { p.GPUModel = "V100"; return p }

func jobJSON(t *testing.T, s annotation.JobSpec) string {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// elasticoPod is a pod that opts in: it carries its job, waits behind
// elastico's scheduling gate, and mounts its decision through a
// downward-API volume (the README's example).
func elasticoPod(ns, name, job string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: map[string]string{annotation.Job: job}},
		Spec: v1.PodSpec{
			SchedulerName:   "elastico-scheduler",
			SchedulingGates: []v1.PodSchedulingGate{{Name: annotation.SchedulingGate}},
			Containers: []v1.Container{{
				Name: "main", Image: "registry.invalid/elastico/job:1",
				Command: []string{"/bin/sh", "-c", "set -a; . /etc/elastico/env; set +a; exec python train.py"},
				Resources: v1.ResourceRequirements{Requests: v1.ResourceList{
					v1.ResourceCPU: resource.MustParse("1"), v1.ResourceMemory: resource.MustParse("1Gi")}},
				VolumeMounts: []v1.VolumeMount{{Name: "elastico", MountPath: "/etc/elastico", ReadOnly: true}},
			}},
			Volumes: []v1.Volume{{Name: "elastico", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{
				Items: []v1.DownwardAPIVolumeFile{
					{Path: "env", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.annotations['" + annotation.Env + "']"}},
					{Path: "generation", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.annotations['" + annotation.Generation + "']"}},
				}}}}},
		},
	}
}

// plainPod did not opt in.
func plainPod(ns, name string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: map[string]string{"team": "web"}},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "web", Image: "registry.invalid/nginx:1",
			Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("2")}}}}},
	}
}

func createPod(t *testing.T, cs kubernetes.Interface, p *v1.Pod) *v1.Pod {
	t.Helper()
	got, err := cs.CoreV1().Pods(p.Namespace).Create(context.Background(), p, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating pod %s/%s: %v", p.Namespace, p.Name, err)
	}
	return got
}
