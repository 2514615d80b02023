package controller

import (
	"strconv"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/examples/kubernetes/annotation"
	"github.com/elastico/elastico/internal/stint"
	v1 "k8s.io/api/core/v1"
)

// observe updates the stints (see package stint) with the snapshot's State
// and sets Job.Observed of every job whose pod reports a throughput that
// was measured where and as the pod runs now: the pod is bound and running,
// its annotations name the generation it carries, and the measurement began
// after the controller last saw the pod's generation, configuration, GPUs
// or GPU neighbours change. Annotations that do not parse are reported
// (ElasticoInvalidObservation) and the job is planned without them; a rate
// that is merely stale (an older generation, a window begun before the last
// change) is passed over in silence: the workload catches up by itself.
func (s *snapshot) observe(t *stint.Tracker) {
	t.Update(&s.state, func(j *elastico.Job) string {
		return strconv.FormatInt(s.jobs[j.ID].current.Generation, 10)
	})
	now := s.state.Now
	for i := range s.state.Jobs {
		j := &s.state.Jobs[i]
		jp := s.jobs[j.ID]
		o, has, err := annotation.ParseObserved(jp.pod.Annotations)
		if err != nil {
			s.problems = append(s.problems, problem{jp.pod, "ElasticoInvalidObservation", "observation ignored: " + err.Error()})
			continue
		}
		if !has || j.Running == nil || jp.pod.Spec.NodeName == "" || jp.pod.Status.Phase != v1.PodRunning ||
			o.Generation != jp.current.Generation {
			continue
		}
		if o.Since.After(now) {
			// A fixed message, so that a skew is reported once, not once
			// per measurement window.
			s.problems = append(s.problems, problem{jp.pod, "ElasticoInvalidObservation",
				"observation ignored: " + annotation.ObservedSince + " is later than the controller's clock: are the node's and the controller's clocks apart?"})
			continue
		}
		if obs, ok := t.Observation(j.ID, now, o.Rate, o.Since); ok {
			j.Observed = obs
		}
	}
}
