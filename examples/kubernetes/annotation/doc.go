// Package annotation is the wire format between elastico's Kubernetes
// controller, its kube-scheduler plugin and the containers they run: the
// annotation a pod carries to opt in (its job description and configuration
// family), the labels read from GPU nodes, and the annotations the controller
// writes back with each decision.
//
// It depends on neither client-go nor the scheduler framework, so the
// controller, the plugin and a container's own launcher can all share it.
//
// A pod opts in with the [Job] annotation (elastico.io/job), a JSON
// [JobSpec]. The controller answers with the [Decision] annotations
// (elastico.io/status, elastico.io/config, elastico.io/node, elastico.io/gpus,
// ...) and with elastico.io/env, the launch parameters as KEY=VALUE lines
// that a container reads through a downward-API volume. A running container
// may report the throughput it measured in the [Observed] annotations
// (elastico.io/observed-rate, -since, -generation), which the controller
// hands the scheduler as elastico.Job.Observed. The pods of a gang carry
// the [GangLabel] and, in their decisions, their rank and every member's
// [Share] ([GangRank], [GangShares]).
package annotation
