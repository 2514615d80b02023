// Command elastico-controller runs elastico's controller on a Kubernetes
// cluster with the library's default scheduler, pds.New(pds.Config{}).
//
//	elastico-controller --interval=5s --scheduler-name=elastico-scheduler --leader-elect
//
// See the README of examples/kubernetes for the deployment, the RBAC it
// needs (deploy/controller.yaml) and the annotations it reads and writes.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/elastico/elastico/examples/kubernetes/controller"
	"github.com/elastico/elastico/pds"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
)

func main() {
	klog.InitFlags(nil)
	var (
		kubeconfig    = flag.String("kubeconfig", "", "kubeconfig file; empty: the in-cluster service account")
		interval      = flag.Duration("interval", 5*time.Second, "time between epochs")
		epochTimeout  = flag.Duration("epoch-timeout", 0, "bound on one Epoch call (0: the interval)")
		statusRefresh = flag.Duration("status-refresh", 30*time.Second, "how often at most a waiting pod's reasons are rewritten when its cause stays the same")
		gpuResource   = flag.String("gpu-resource", "nvidia.com/gpu", "node resource that counts GPUs")
		schedulerName = flag.String("scheduler-name", "elastico-scheduler", "scheduler profile that runs elastico's plugin")
		leaderElect   = flag.Bool("leader-elect", false, "run only while holding a Lease, so that replicas can stand by")
		leaseNS       = flag.String("leader-elect-namespace", "elastico-system", "namespace of the Lease")
		leaseName     = flag.String("leader-elect-name", "elastico-controller", "name of the Lease")
		qps           = flag.Float64("kube-api-qps", 50, "API requests per second to the API server (client-go's default, 5, takes 30 minutes to admit 5,000 pods)")
		burst         = flag.Int("kube-api-burst", 100, "API requests in a burst above --kube-api-qps")
	)
	flag.Parse()
	if err := run(*kubeconfig, controller.Config{
		Interval: *interval, EpochTimeout: *epochTimeout, StatusRefresh: *statusRefresh, GPUResource: v1.ResourceName(*gpuResource), SchedulerName: *schedulerName,
	}, *leaderElect, *leaseNS, *leaseName, float32(*qps), *burst); err != nil {
		fmt.Fprintln(os.Stderr, "elastico-controller:", err)
		os.Exit(1)
	}
}

func run(kubeconfig string, cfg controller.Config, leaderElect bool, leaseNS, leaseName string, qps float32, burst int) error {
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("loading the client configuration: %w", err)
	}
	rc.UserAgent = "elastico-controller"
	rc.QPS, rc.Burst = qps, burst
	cfg.Client, err = kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	sched, err := pds.New(pds.Config{})
	if err != nil {
		return err
	}
	cfg.Scheduler = sched
	ctl, err := controller.New(cfg)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if !leaderElect {
		return ctl.Run(ctx)
	}
	id, err := os.Hostname()
	if err != nil {
		return err
	}
	if name := os.Getenv("POD_NAME"); name != "" {
		id = name
	}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: leaseNS, Name: leaseName},
		Client:     cfg.Client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: id},
	}
	errc := make(chan error, 1)
	leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
		Lock: lock, ReleaseOnCancel: true,
		LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) { errc <- ctl.Run(ctx) },
			OnStoppedLeading: func() {
				// Losing the Lease mid-run: another replica takes over from
				// what the pods say; this one must not write again.
				if ctx.Err() == nil {
					klog.Error("elastico-controller: lost the lease")
					os.Exit(1)
				}
			},
		},
	})
	select {
	case err := <-errc:
		return err
	default:
		if ctx.Err() != nil {
			return nil
		}
		return errors.New("leader election ended")
	}
}
