package plugin_test

import (
	"context"
	"fmt"

	"github.com/elastico/elastico/examples/kubernetes/annotation"
	"github.com/elastico/elastico/examples/kubernetes/plugin"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// What PreFilter makes of three pods: one that did not opt in, one the Plan
// keeps waiting, and one it admitted on node gpu-a.
func ExamplePlugin_PreFilter() {
	p, err := plugin.NewWithLister(plugin.Args{}, corelisters.NewPodLister(cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})))
	if err != nil {
		fmt.Println(err)
		return
	}
	waiting := annotation.Decision{Status: "Unplaceable: no GPU has 0.50 SM free", Generation: 1}
	admitted := annotation.Decision{Status: "Scheduled", Generation: 2, Config: "b64", Node: "gpu-a",
		GPUs: []annotation.GPU{{Index: 1, Shared: true}}, SM: 0.5, MemoryGiB: 12, Slowdown: 1.04, Action: "start"}
	withJob := func(d annotation.Decision) map[string]string {
		m := d.Annotations()
		m[annotation.Job] = "{}"
		return m
	}
	for _, pod := range []*v1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Name: "web"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "waits", Annotations: withJob(waiting)}},
		{ObjectMeta: metav1.ObjectMeta{Name: "runs", Annotations: withJob(admitted)}},
	} {
		res, st := p.PreFilter(context.Background(), framework.NewCycleState(), pod, nil)
		switch {
		case !st.IsSuccess():
			fmt.Printf("%s: %s %q\n", pod.Name, st.Code(), st.Message())
		default:
			fmt.Printf("%s: only node(s) %v\n", pod.Name, res.NodeNames.UnsortedList())
		}
	}
	// Output:
	// web: Skip ""
	// waits: UnschedulableAndUnresolvable "elastico: waiting: Unplaceable: no GPU has 0.50 SM free"
	// runs: only node(s) [gpu-a]
}
