// Package controller runs elastico on a Kubernetes cluster. Every epoch it
// builds an elastico.State from the pods that opted in (the
// elastico.io/job annotation) and the nodes with GPU capacity, asks an
// elastico.Scheduler for a Plan, and writes each decision on its pod:
// annotations a container reads through a downward-API volume, a pod
// condition, and the removal of the elastico.io/admission scheduling gate
// once the Plan first admits the pod. The kube-scheduler plugin of package
// plugin then binds the pod to the node the Plan chose.
//
// A gang (pods labelled elastico.io/gang, one per node share of a job's
// GPUs) is one job of the State, which may spread over nodes; each member
// gets its share, and all carry one generation (see gang.go).
//
// Every decision lives on its pod, so a restarted controller rebuilds the
// same State from the cluster: nothing but the scheduler's warm-start
// prices (elastico.Carry) and when each running pod's GPU neighbours last
// changed is kept in memory. A running pod's own throughput report (the
// elastico.io/observed-* annotations) becomes its Job.Observed when it was
// measured under the pod's present generation and neighbours. Pods that did
// not opt in are never written to; a pod whose annotation does not parse is
// left alone and gets an Event that says why.
package controller
