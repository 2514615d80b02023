package controller_test

import (
	"context"
	"fmt"
	"time"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/examples/kubernetes/annotation"
	"github.com/elastico/elastico/examples/kubernetes/controller"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
)

// planFunc makes a function an elastico.Scheduler.
type planFunc func(context.Context, *elastico.State) (*elastico.Plan, error)

func (f planFunc) Epoch(ctx context.Context, s *elastico.State) (*elastico.Plan, error) {
	return f(ctx, s)
}

// One epoch: two pods that opted in, one GPU node with MPS, and a Plan that
// puts both jobs on its GPU 1.
func ExampleController_Step() {
	gpus := v1.ResourceList{"nvidia.com/gpu": resource.MustParse("2"), v1.ResourceCPU: resource.MustParse("32"), v1.ResourceMemory: resource.MustParse("128Gi")}
	node := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "gpu-a", Labels: map[string]string{"nvidia.com/gpu.memory": "40960", "elastico.io/gpu-sharing": "mps"}},
		Status:     v1.NodeStatus{Allocatable: gpus, Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}}},
	}
	pod := func(name, job string, age int) *v1.Pod {
		return &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: name, Annotations: map[string]string{annotation.Job: job},
				CreationTimestamp: metav1.NewTime(time.Date(2026, 3, 1, 12, 0, age, 0, time.UTC))},
			Spec: v1.PodSpec{SchedulerName: "elastico-scheduler", SchedulingGates: []v1.PodSchedulingGate{{Name: annotation.SchedulingGate}}},
		}
	}
	client := fake.NewClientset(node,
		pod("train", `{"class":"training","optimizer":"sgd","referenceBatch":32,"family":[{"id":"b64","batchSize":64,"gpus":1,"sm":0.6,"gpuMemoryGiB":12,"throughput":300}]}`, 0),
		pod("serve", `{"class":"inference","family":[{"id":"kv20","gpus":1,"sm":0.3,"gpuMemoryGiB":18,"maxSeqs":32,"throughput":900}]}`, 1))

	both := planFunc(func(_ context.Context, s *elastico.State) (*elastico.Plan, error) {
		plan := &elastico.Plan{}
		for _, j := range s.Jobs {
			a := &elastico.Assignment{ConfigID: j.Profiles[0].Config.ID, GPUs: []string{"gpu-a/gpu1"}}
			plan.Decisions = append(plan.Decisions, elastico.Decision{JobID: j.ID, Assignment: a, Slowdown: 1.05})
			plan.Actions = append(plan.Actions, elastico.Action{Kind: elastico.Start, JobID: j.ID, To: a})
		}
		return plan, nil
	})
	c, err := controller.New(controller.Config{Client: client, Scheduler: both, Recorder: record.NewFakeRecorder(10)})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := c.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	epoch, err := c.Step(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, line := range epoch.Applied {
		fmt.Println(line)
	}
	p, _ := client.CoreV1().Pods("ml").Get(ctx, "train", metav1.GetOptions{})
	fmt.Print(p.Annotations[annotation.Env])
	// Output:
	// update ml/train: start b64 on gpu-a GPUs [1] (shared) generation 1, gate removed
	// update ml/serve: start kv20 on gpu-a GPUs [1] (shared) generation 1, gate removed
	// CUDA_DEVICE_ORDER=PCI_BUS_ID
	// CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=60
	// CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=12288MB
	// CUDA_VISIBLE_DEVICES=1
	// ELASTICO_AMP=0
	// ELASTICO_BATCH_SIZE=64
	// ELASTICO_CHECKPOINTING=0
	// ELASTICO_CONFIG=b64
	// ELASTICO_GENERATION=1
	// ELASTICO_LR_SCALE=2
	// ELASTICO_MEMORY_FRACTION=0.3000
	// PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:512
}
