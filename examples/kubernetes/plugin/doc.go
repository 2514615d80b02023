// Package plugin is elastico's kube-scheduler plugin. It makes the
// scheduler bind each pod that opted in (the elastico.io/job annotation) to
// the node elastico's Plan chose for it, and nowhere else:
//
//   - PreFilter reads the decision the controller wrote on the pod. A pod
//     the Plan has not admitted is rejected with the Plan's own reason, which
//     the scheduler copies into the pod's PodScheduled condition; an
//     admitted pod narrows the nodes to evaluate to the Plan's node.
//   - Filter checks that the Plan's GPUs are free on that node: no pod still
//     there (one being evicted, say) holds one of them whole, and the SM
//     shares and memory budgets of the pods sharing one stay within it.
//   - Reserve checks that the decision did not change while the pod was in
//     its scheduling cycle.
//   - Permit holds a gang's member (a pod whose decision lists the gang's
//     shares) on its node until every member of that decision has its node
//     too, then lets them all go; a member that waits past the gang timeout
//     is rejected, and Unreserve rejects the rest of its gang with it.
//
// Pods that did not opt in are skipped at PreFilter: the plugin never
// changes how they are scheduled. The plugin keeps nothing in memory
// between cycles (a gang's waiting members are the framework's), so a
// restarted scheduler decides exactly as before.
//
// Register it with app.WithPlugin(plugin.Name, plugin.New); the
// kube-scheduler command of this module does.
package plugin
