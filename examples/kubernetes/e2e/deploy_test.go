package e2e

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/elastico/elastico/examples/kubernetes/annotation"
	"github.com/elastico/elastico/examples/kubernetes/plugin"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	schedscheme "k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	schedvalidation "k8s.io/kubernetes/pkg/scheduler/apis/config/validation"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
)

// readManifests decodes every document of deploy/<name>.
func readManifests(t *testing.T, name string) []runtime.Object {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "deploy", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := utilyaml.NewYAMLReader(bufio.NewReader(f))
	var out []runtime.Object
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(doc, nil, nil)
		if err != nil {
			t.Fatalf("%s: document %d: %v", name, len(out)+1, err)
		}
		out = append(out, obj)
	}
}

// exampleJob is deploy/example-job.yaml's Job.
func exampleJob(t *testing.T) *batchv1.Job {
	t.Helper()
	for _, obj := range readManifests(t, "example-job.yaml") {
		if j, ok := obj.(*batchv1.Job); ok {
			return j
		}
	}
	t.Fatal("deploy/example-job.yaml has no Job")
	return nil
}

// TestDeployManifests checks that the manifests the README tells an
// operator to apply decode, that the scheduler configuration validates and
// enables the plugin, and that the example job opts in correctly.
func TestDeployManifests(t *testing.T) {
	var sched string
	for _, obj := range readManifests(t, "scheduler.yaml") {
		if cm, ok := obj.(*v1.ConfigMap); ok {
			sched = cm.Data["scheduler.yaml"]
		}
	}
	if sched == "" {
		t.Fatal("deploy/scheduler.yaml has no ConfigMap with scheduler.yaml")
	}
	obj, _, err := schedscheme.Codecs.UniversalDecoder().Decode([]byte(sched), nil, nil)
	if err != nil {
		t.Fatalf("scheduler configuration: %v", err)
	}
	cfg, ok := obj.(*schedconfig.KubeSchedulerConfiguration)
	if !ok {
		t.Fatalf("scheduler configuration decodes to %T", obj)
	}
	if err := schedvalidation.ValidateKubeSchedulerConfiguration(cfg); err != nil {
		t.Fatalf("scheduler configuration does not validate: %v", err)
	}
	prof := cfg.Profiles[0]
	if prof.SchedulerName != "elastico-scheduler" {
		t.Errorf("profile is %q", prof.SchedulerName)
	}
	for point, set := range map[string]schedconfig.PluginSet{"preFilter": prof.Plugins.PreFilter, "filter": prof.Plugins.Filter, "reserve": prof.Plugins.Reserve, "permit": prof.Plugins.Permit} {
		if !slices.ContainsFunc(set.Enabled, func(p schedconfig.Plugin) bool { return p.Name == plugin.Name }) {
			t.Errorf("the plugin is not enabled at %s", point)
		}
	}
	if !slices.ContainsFunc(prof.Plugins.PostFilter.Disabled, func(p schedconfig.Plugin) bool { return p.Name == "DefaultPreemption" }) {
		t.Error("the scheduler's own preemption is not disabled: it would evict pods the Plan runs")
	}
	for _, pc := range prof.PluginConfig {
		if pc.Name == plugin.Name {
			var args plugin.Args
			if err := frameworkruntime.DecodeInto(pc.Args, &args); err != nil || args.GPUResource != "nvidia.com/gpu" {
				t.Errorf("plugin args: %+v, %v", args, err)
			}
		}
	}

	var deployments int
	for _, obj := range readManifests(t, "controller.yaml") {
		if d, ok := obj.(*appsv1.Deployment); ok {
			deployments++
			if args := strings.Join(d.Spec.Template.Spec.Containers[0].Args, " "); !strings.Contains(args, "--scheduler-name=elastico-scheduler") {
				t.Errorf("the controller's args %q do not name the scheduler", args)
			}
		}
	}
	if deployments != 1 {
		t.Errorf("deploy/controller.yaml has %d Deployments", deployments)
	}

	job := exampleJob(t)
	pod := job.Spec.Template
	if _, err := annotation.ParseJob("ml/resnet50", pod.Annotations[annotation.Job]); err != nil {
		t.Errorf("the example job's annotation: %v", err)
	}
	if pod.Spec.SchedulerName != "elastico-scheduler" || len(pod.Spec.SchedulingGates) != 1 || pod.Spec.SchedulingGates[0].Name != annotation.SchedulingGate {
		t.Errorf("the example job does not name the scheduler and the gate: %q %v", pod.Spec.SchedulerName, pod.Spec.SchedulingGates)
	}
	checkGangExample(t)
	var paths []string
	for _, v := range pod.Spec.Volumes {
		if v.DownwardAPI != nil {
			for _, it := range v.DownwardAPI.Items {
				paths = append(paths, it.Path+"="+it.FieldRef.FieldPath)
			}
		}
	}
	for _, want := range []string{"env=metadata.annotations['" + annotation.Env + "']", "generation=metadata.annotations['" + annotation.Generation + "']"} {
		if !slices.Contains(paths, want) {
			t.Errorf("the example job's downward-API volume lacks %s (has %v)", want, paths)
		}
	}
}

// checkGangExample checks deploy/example-gang.yaml: an Indexed Job whose
// pods carry the gang's label and a job whose members is its completions,
// and a headless Service that selects them.
func checkGangExample(t *testing.T) {
	t.Helper()
	var job *batchv1.Job
	var svc *v1.Service
	for _, obj := range readManifests(t, "example-gang.yaml") {
		switch o := obj.(type) {
		case *batchv1.Job:
			job = o
		case *v1.Service:
			svc = o
		}
	}
	if job == nil || svc == nil {
		t.Fatal("deploy/example-gang.yaml wants a Job and a Service")
	}
	tmpl := job.Spec.Template
	gang := tmpl.Labels[annotation.GangLabel]
	spec, _, err := annotation.ParseJobSpec("ml/gang:"+gang, tmpl.Annotations[annotation.Job])
	switch {
	case err != nil:
		t.Errorf("the example gang's annotation: %v", err)
	case gang == "" || job.Spec.CompletionMode == nil || *job.Spec.CompletionMode != batchv1.IndexedCompletion ||
		job.Spec.Completions == nil || int(*job.Spec.Completions) != spec.Members || job.Spec.Parallelism == nil || *job.Spec.Parallelism != *job.Spec.Completions:
		t.Errorf("the example gang: label %q, members %d, want an Indexed Job running that many pods at once", gang, spec.Members)
	case svc.Spec.ClusterIP != v1.ClusterIPNone || svc.Spec.Selector[annotation.GangLabel] != gang || tmpl.Spec.Subdomain != svc.Name:
		t.Errorf("the example gang's Service must be headless, select the gang and be its pods' subdomain")
	case tmpl.Spec.SchedulerName != "elastico-scheduler" || len(tmpl.Spec.SchedulingGates) != 1:
		t.Errorf("the example gang does not name the scheduler and the gate")
	}
}
