// Command kube-scheduler is the upstream kube-scheduler (v1.37) with
// elastico's plugin compiled in. Enable the plugin in a
// KubeSchedulerConfiguration (see the README of examples/kubernetes):
//
//	kube-scheduler --config=/etc/kubernetes/elastico-scheduler.yaml
package main

import (
	"os"

	"github.com/elastico/elastico/examples/kubernetes/plugin"
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
)

func main() {
	os.Exit(cli.Run(app.NewSchedulerCommand(app.WithPlugin(plugin.Name, plugin.New))))
}
