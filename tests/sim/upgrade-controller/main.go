// Command upgrade-controller is the test bed's driver-upgrade controller: it runs NVIDIA's driver upgrade state
// machine (github.com/NVIDIA/k8s-operator-libs, package pkg/upgrade) against the bed's API server, as the GPU
// Operator does. On every pass it builds the cluster upgrade state from the driver DaemonSet(s) and their pods and
// applies the upgrade policy of the ClusterPolicy's spec.driver.upgradePolicy (or each NVIDIADriver's).
//
// What the operator adds around the library is ours, written from its documented behaviour:
//   - the restart-only predicate of 26.7.0 and later: equal DRIVER_CONFIG_DIGEST values on the running driver pod
//     and its DaemonSet's template mean an in-place driver restart (no workload eviction, no drain);
//   - with autoUpgrade off the upgrade-state label is taken off every node;
//   - GPU pods (the pod-deletion state's filter) are those asking for nvidia.com/gpu or nvidia.com/mig-* resources;
//   - the validation state watches the operator validator's pods (app=nvidia-operator-validator).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/record"

	"github.com/NVIDIA/k8s-operator-libs/api/upgrade/v1alpha1"
	"github.com/NVIDIA/k8s-operator-libs/pkg/upgrade"
)

const (
	driverComponentLabel = "app.kubernetes.io/component"
	driverComponent      = "nvidia-driver"
	nvidiaDriverLabel    = "nvidia.com/nvidiadriver"
	validatorSelector    = "app=nvidia-operator-validator"
	digestEnv            = "DRIVER_CONFIG_DIGEST"
	componentName        = "nvidia-gpu-operator"
)

var (
	clusterPolicies = schema.GroupVersionResource{Group: "nvidia.com", Version: "v1", Resource: "clusterpolicies"}
	nvidiaDrivers   = schema.GroupVersionResource{Group: "nvidia.com", Version: "v1alpha1", Resource: "nvidiadrivers"}
)

// group is one set of driver DaemonSets upgraded under one policy.
type group struct {
	name      string
	namespace string
	labels    map[string]string
	policy    *v1alpha1.DriverUpgradePolicySpec
}

type controller struct {
	log       logr.Logger
	namespace string // the operator's namespace, when the ClusterPolicy names none (Helm's release namespace)
	dyn       dynamic.Interface
	core      kubernetes.Interface
	manager   upgrade.ClusterUpgradeStateManager
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the API server")
	namespace := flag.String("namespace", "gpu-operator", "namespace of the operator's driver DaemonSets")
	interval := flag.Duration("interval", time.Second, "time between two reconcile passes")
	verbosity := flag.Int("v", -1, "log verbosity (-1: errors only, 0: the library's info, 1: debug)")
	flag.Parse()
	if err := run(*kubeconfig, *namespace, *interval, *verbosity); err != nil {
		fmt.Fprintln(os.Stderr, "upgrade-controller:", err)
		os.Exit(1)
	}
}

func run(kubeconfig, namespace string, interval time.Duration, verbosity int) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("kubeconfig %q: %w", kubeconfig, err)
	}
	cfg.QPS, cfg.Burst = 50, 100
	log := funcr.New(func(prefix, args string) {
		fmt.Fprintln(os.Stderr, time.Now().UTC().Format(time.RFC3339Nano), prefix, args)
	},
		funcr.Options{Verbosity: verbosity})
	core, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	broadcaster := record.NewBroadcaster()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: core.CoreV1().Events("")})
	defer broadcaster.Shutdown()
	recorder := broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: componentName})

	upgrade.SetDriverName("gpu")
	manager, err := upgrade.NewClusterUpgradeStateManager(log, cfg, recorder, upgrade.StateOptions{})
	if err != nil {
		return err
	}
	manager = manager.WithPodDeletionEnabled(gpuPod).WithValidationEnabled(validatorSelector).
		WithRestartOnlyPredicate(sameDriverConfig)
	c := &controller{log: log, namespace: namespace, dyn: dyn, core: core, manager: manager}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	log.Info("started", "namespace", namespace, "interval", interval.String())
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		if err := c.reconcile(ctx); err != nil && ctx.Err() == nil {
			log.Error(err, "reconcile")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
	}
}

// reconcile runs one pass: each driver group's state built afresh and its policy applied.
func (c *controller) reconcile(ctx context.Context) error {
	groups, err := c.groups(ctx)
	if err != nil || groups == nil {
		return err
	}
	for _, g := range groups {
		if g.policy == nil || !g.policy.AutoUpgrade {
			if err := c.clearStates(ctx, g.namespace, g.labels); err != nil {
				return err
			}
			continue
		}
		state, err := c.manager.BuildState(ctx, g.namespace, g.labels)
		if err != nil {
			return fmt.Errorf("build state of %s: %w", g.name, err)
		}
		if err := c.manager.ApplyState(ctx, state, g.policy); err != nil {
			return fmt.Errorf("apply state of %s: %w", g.name, err)
		}
	}
	return nil
}

// groups reads the ClusterPolicy (the oldest, the one the operator uses; none: nothing to do) and, where it uses the NVIDIADriver CRD, one
// group per NVIDIADriver with its own upgrade policy or else the ClusterPolicy's.
func (c *controller) groups(ctx context.Context) ([]group, error) {
	cps, err := c.dyn.Resource(clusterPolicies).List(ctx, metav1.ListOptions{})
	if err != nil || len(cps.Items) == 0 {
		return nil, err
	}
	cp := cps.Items[0]
	for _, other := range cps.Items[1:] {
		if created, first := other.GetCreationTimestamp(), cp.GetCreationTimestamp(); created.Before(&first) {
			cp = other
		}
	}
	namespace := c.namespace
	if ns := cp.GetAnnotations()["meta.helm.sh/release-namespace"]; ns != "" {
		namespace = ns
	}
	driver, _, _ := unstructured.NestedMap(cp.Object, "spec", "driver")
	if enabled, found, _ := unstructured.NestedBool(driver, "enabled"); found && !enabled {
		return nil, nil
	}
	cpPolicy, err := policyOf(driver)
	if err != nil {
		return nil, err
	}
	base := map[string]string{driverComponentLabel: driverComponent}
	if crd, _, _ := unstructured.NestedBool(driver, "useNvidiaDriverCRD"); !crd {
		return []group{{name: "clusterpolicy/" + cp.GetName(), namespace: namespace, labels: base, policy: cpPolicy}}, nil
	}
	nvds, err := c.dyn.Resource(nvidiaDrivers).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := []group{}
	for _, nvd := range nvds.Items {
		spec, _, _ := unstructured.NestedMap(nvd.Object, "spec")
		policy, err := policyOf(spec)
		if err != nil {
			return nil, fmt.Errorf("nvidiadriver %s: %w", nvd.GetName(), err)
		}
		if policy == nil {
			policy = cpPolicy
		}
		labels := map[string]string{driverComponentLabel: driverComponent, nvidiaDriverLabel: nvd.GetName()}
		out = append(out, group{name: "nvidiadriver/" + nvd.GetName(), namespace: namespace, labels: labels,
			policy: policy})
	}
	return out, nil
}

// policyOf decodes an upgradePolicy field; nil when there is none.
func policyOf(parent map[string]interface{}) (*v1alpha1.DriverUpgradePolicySpec, error) {
	raw, found, _ := unstructured.NestedFieldNoCopy(parent, "upgradePolicy")
	if !found || raw == nil {
		return nil, nil
	}
	data, err := json.Marshal(raw)
	if err != nil {
		return nil, err
	}
	policy := &v1alpha1.DriverUpgradePolicySpec{}
	if err := json.Unmarshal(data, policy); err != nil {
		return nil, fmt.Errorf("upgradePolicy: %w", err)
	}
	return policy, nil
}

// clearStates takes the upgrade-state label off the nodes running the group's driver pods (autoUpgrade off).
func (c *controller) clearStates(ctx context.Context, namespace string, labels map[string]string) error {
	key := upgrade.GetUpgradeStateLabelKey()
	pods, err := c.core.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector(labels)})
	if err != nil {
		return err
	}
	patch := []byte(fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, key))
	for _, pod := range pods.Items {
		if pod.Spec.NodeName == "" {
			continue
		}
		node, err := c.core.CoreV1().Nodes().Get(ctx, pod.Spec.NodeName, metav1.GetOptions{})
		if err != nil {
			continue
		}
		if _, has := node.Labels[key]; !has {
			continue
		}
		if _, err := c.core.CoreV1().Nodes().Patch(ctx, node.Name, types.StrategicMergePatchType, patch,
			metav1.PatchOptions{}); err != nil {
			return err
		}
		c.log.Info("auto upgrade off: upgrade state label removed", "node", node.Name)
	}
	return nil
}

func selector(labels map[string]string) string {
	parts := make([]string, 0, len(labels))
	for k, v := range labels {
		parts = append(parts, k+"="+v)
	}
	return strings.Join(parts, ",")
}

// gpuPod is the pod-deletion state's filter: a pod asking for a GPU (whole or MIG slice).
func gpuPod(pod corev1.Pod) bool {
	for _, c := range pod.Spec.Containers {
		for name := range c.Resources.Limits {
			n := string(name)
			if n == "nvidia.com/gpu" || strings.HasPrefix(n, "nvidia.com/mig-") {
				return true
			}
		}
	}
	return false
}

// sameDriverConfig is the restart-only predicate: the running driver pod and its DaemonSet's template carry the same
// DRIVER_CONFIG_DIGEST (what installs the driver did not change), so the driver pod restarts in place.
func sameDriverConfig(running, desired *corev1.PodSpec) (bool, error) {
	have, want := digest(running), digest(desired)
	return have != "" && have == want, nil
}

func digest(spec *corev1.PodSpec) string {
	containers := append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...)
	for _, c := range containers {
		for _, e := range c.Env {
			if e.Name == digestEnv && e.Value != "" {
				return e.Value
			}
		}
	}
	return ""
}
