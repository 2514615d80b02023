package controller

import (
	"fmt"
	"time"

	"github.com/elastico/elastico/examples/kubernetes/annotation"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

var epoch0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

var testOptions = options{gpuResource: "nvidia.com/gpu", schedulerName: "elastico-scheduler"}

// gpuNode is a Ready node with n GPUs of memMiB each.
func gpuNode(name string, n int, memMiB int, sharing string) *v1.Node {
	rl := v1.ResourceList{
		v1.ResourceCPU: resource.MustParse("32"), v1.ResourceMemory: resource.MustParse("128Gi"),
		"nvidia.com/gpu": *resource.NewQuantity(int64(n), resource.DecimalSI),
	}
	labels := map[string]string{annotation.GPUMemoryLabel: fmt.Sprint(memMiB)}
	if sharing != "" {
		labels[annotation.SharingLabel] = sharing
	}
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), Labels: labels},
		Status: v1.NodeStatus{Allocatable: rl, Capacity: rl, Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}}}}
}

const oneGPU = `{"class":"training","model":"m","referenceBatch":32,"family":[
  {"id":"small","batchSize":32,"gpus":1,"sm":0.5,"gpuMemoryGiB":10,"cpu":2,"ramGiB":4,"throughput":100},
  {"id":"pair","batchSize":64,"gpus":2,"sm":1,"gpuMemoryGiB":20,"cpu":2,"ramGiB":4,"throughput":180}]}`

// jobPod is an opted-in pod created at epoch0 + age seconds, gated.
func newPod(name string, age int, job string) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), ResourceVersion: "1",
			CreationTimestamp: metav1.NewTime(epoch0.Add(time.Duration(age) * time.Second)),
			Annotations:       map[string]string{}},
		Spec: v1.PodSpec{SchedulerName: "elastico-scheduler", SchedulingGates: []v1.PodSchedulingGate{{Name: annotation.SchedulingGate}},
			Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}}}}},
	}
	if job != "" {
		p.Annotations[annotation.Job] = job
	}
	return p
}

// admitted gives the pod a decision on node's GPUs and optionally binds it.
func admitted(p *v1.Pod, config, node string, bound bool, gpus ...int) *v1.Pod {
	d := annotation.Decision{Status: "Scheduled", Generation: 1, Config: config, Node: node, SM: 0.5, MemoryGiB: 10, Slowdown: 1, Action: "start",
		Launch: []string{"ELASTICO_BATCH_SIZE=32"}}
	for _, g := range gpus {
		d.GPUs = append(d.GPUs, annotation.GPU{Index: g})
	}
	for k, v := range d.Annotations() {
		p.Annotations[k] = v
	}
	p.Spec.SchedulingGates = nil
	if bound {
		p.Spec.NodeName = node
	}
	p.Status.Conditions = []v1.PodCondition{{Type: annotation.AdmittedCnd, Status: v1.ConditionTrue, Reason: "Admitted",
		Message: "the Plan runs the job under configuration " + config}}
	return p
}
