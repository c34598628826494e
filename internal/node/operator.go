package node

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/lookout-operator/lookout/internal/install"
)

// OperatorNamespace and OperatorDeployment name what the kustomize base installs.
const (
	OperatorNamespace  = install.DefaultNamespace
	OperatorDeployment = install.Name
	// LeaderLease is the Lease the operator's replicas elect their leader with.
	LeaderLease = "lookout-operator-leader"
)

// WriteOverlay writes into dir a kustomize overlay of the repository's
// generated-RBAC variant of the base (root/config/generated-rbac) for this node: the operator and reloader images are the ones
// imported into the node (imgs), never pulled. Everything else is the base as a user
// applies it: two replicas with leader election, the CRDs, RBAC, the webhook Service and
// configuration, self-monitoring.
func WriteOverlay(dir, root string, imgs Images) error {
	// The variant that generates the pods' RBAC: the node's Prometheus
	// discovers with it.
	return writeOverlay(dir, root, install.GeneratedRBACDir, imgs.Lookout, imgs.Reloader)
}

// WritePostgresOverlay writes into dir a kustomize overlay of the PostgreSQL-only
// variant of the base (root/config/postgres-only) for this node: the operator's image
// is the imported one (operator), never pulled, and the instances' image the imported
// lookout-postgres (postgres), named by --postgres-image, which the base leaves to
// the operator's default (the release image of its own version). The base's
// --reloader-image stays: no PostgreSQL pod runs the reloader.
func WritePostgresOverlay(dir, root, operator, postgres string) error {
	return writeOverlay(dir, root, install.PostgresOnlyDir, operator, "", "--postgres-image="+postgres)
}

// writeOverlay writes the overlay of the variant at root/base: the operator's image
// lookout, --reloader-image replaced by reloader unless empty, extra arguments appended,
// and imagePullPolicy Never.
func writeOverlay(dir, root, baseDir, lookout, reloader string, extraArgs ...string) error {
	base, err := filepath.Rel(dir, filepath.Join(root, baseDir))
	if err != nil {
		return err
	}
	var ops []map[string]any
	if reloader != "" {
		// The reloader image is an argument of the operator, not a container image, so the
		// images transformer does not reach it: a JSON patch replaces it, after testing that
		// the argument at that index is the base's, so a reordered base fails loudly instead
		// of being patched in the wrong place.
		args := install.Args(install.Options{})
		at := -1
		for i, a := range args {
			if strings.HasPrefix(a, "--reloader-image=") {
				at = i
			}
		}
		if at < 0 {
			return fmt.Errorf("the install's operator arguments %q have no --reloader-image", args)
		}
		argPath := fmt.Sprintf("/spec/template/spec/containers/0/args/%d", at)
		ops = append(ops,
			map[string]any{"op": "test", "path": argPath, "value": args[at]},
			map[string]any{"op": "replace", "path": argPath, "value": "--reloader-image=" + reloader})
	}
	for _, a := range extraArgs {
		ops = append(ops, map[string]any{"op": "add", "path": "/spec/template/spec/containers/0/args/-", "value": a})
	}
	// The images exist on this node only.
	ops = append(ops, map[string]any{"op": "add", "path": "/spec/template/spec/containers/0/imagePullPolicy", "value": string(corev1.PullNever)})
	patch, err := yaml.Marshal(ops)
	if err != nil {
		return err
	}
	name, tag, ok := strings.Cut(lookout, ":")
	if !ok {
		return fmt.Errorf("image %q has no tag", lookout)
	}
	k, err := yaml.Marshal(map[string]any{
		"apiVersion": "kustomize.config.k8s.io/v1beta1",
		"kind":       "Kustomization",
		"resources":  []string{base},
		"images":     []map[string]string{{"name": install.ImageRepo, "newName": name, "newTag": tag}},
		"patches": []map[string]any{{
			"target": map[string]string{"kind": "Deployment", "name": OperatorDeployment},
			"patch":  string(patch),
		}},
	})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "kustomization.yaml"), append([]byte("# The kustomize base for a local node (internal/node).\n"), k...), 0o644)
}

// InstallOperator renders the overlay in dir with kubectl kustomize (into
// dir/rendered.yaml) and applies it server-side, as a user installs the operator.
func (e *Env) InstallOperator(ctx context.Context, dir string) error {
	rendered, err := e.kubectl(ctx, "kustomize", dir)
	if err != nil {
		return err
	}
	path := filepath.Join(dir, "rendered.yaml")
	if err := os.WriteFile(path, rendered, 0o644); err != nil {
		return err
	}
	if _, err := e.kubectl(ctx, "apply", "--server-side", "--field-manager=lookout-node-install", "-f", path); err != nil {
		return err
	}
	e.installed = true
	return nil
}

// Kubectl runs the cached kubectl against the control plane and returns its output.
func (e *Env) Kubectl(ctx context.Context, args ...string) ([]byte, error) {
	return e.kubectl(ctx, args...)
}

func (e *Env) kubectl(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, e.KubectlPath, append([]string{"--kubeconfig", e.CP.KubeconfigPath}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("kubectl %s: %w\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return out, nil
}

// Get is `kubectl get what -A -o wide`, for the demo and test logs.
func (e *Env) Get(ctx context.Context, what string) (string, error) {
	out, err := e.kubectl(ctx, "get", what, "-A", "-o", "wide")
	return string(out), err
}

// WaitOperatorReady waits until the operator's Deployment has all its replicas updated
// and Ready on the node and is Available, and one of its pods holds the leader Lease. It
// returns the pods.
func (e *Env) WaitOperatorReady(ctx context.Context, timeout time.Duration) ([]corev1.Pod, error) {
	var pods []corev1.Pod
	err := poll(ctx, timeout, func() (bool, error) {
		d := &appsv1.Deployment{}
		if err := e.Client.Get(ctx, client.ObjectKey{Namespace: OperatorNamespace, Name: OperatorDeployment}, d); err != nil {
			return false, err
		}
		want := int32(1)
		if d.Spec.Replicas != nil {
			want = *d.Spec.Replicas
		}
		available := false
		for _, c := range d.Status.Conditions {
			if c.Type == appsv1.DeploymentAvailable && c.Status == corev1.ConditionTrue {
				available = true
			}
		}
		if !available || d.Status.ObservedGeneration < d.Generation || d.Status.UpdatedReplicas != want || d.Status.ReadyReplicas != want {
			return false, fmt.Errorf("deployment %s/%s: %d of %d replicas updated, %d Ready, conditions %+v", d.Namespace, d.Name, d.Status.UpdatedReplicas, want, d.Status.ReadyReplicas, d.Status.Conditions)
		}
		var list corev1.PodList
		if err := e.Client.List(ctx, &list, client.InNamespace(OperatorNamespace), client.MatchingLabels(d.Spec.Selector.MatchLabels)); err != nil {
			return false, err
		}
		lease := &coordinationv1.Lease{}
		if err := e.Client.Get(ctx, client.ObjectKey{Namespace: OperatorNamespace, Name: LeaderLease}, lease); err != nil {
			return false, fmt.Errorf("leader Lease: %w", err)
		}
		holder := ""
		if lease.Spec.HolderIdentity != nil {
			holder = *lease.Spec.HolderIdentity
		}
		pods = list.Items
		for _, p := range pods {
			// controller-runtime's identity is the hostname (the pod's name), an
			// underscore and a random suffix.
			if strings.HasPrefix(holder, p.Name+"_") {
				return true, nil
			}
		}
		return false, fmt.Errorf("leader Lease held by %q, not by a pod of the Deployment", holder)
	})
	if err != nil {
		return nil, fmt.Errorf("operator not Ready: %w\n%s\n%s", err, e.OperatorLog(), e.Node.KubeletLog())
	}
	return pods, nil
}

// OperatorLog is the end of the operator containers' logs on the node, for failures.
func (e *Env) OperatorLog() string {
	files, _ := filepath.Glob(filepath.Join(e.Node.PodLogsDir(), OperatorNamespace+"_*", "operator", "*.log"))
	var b strings.Builder
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if len(data) > 4000 {
			data = data[len(data)-4000:]
		}
		fmt.Fprintf(&b, "--- %s\n%s\n", f, data)
	}
	return b.String()
}

// uninstallOperator deletes the operator's Deployment and waits until the kubelet has
// torn its pods down, so that the node stops with nothing left running.
func (e *Env) uninstallOperator(ctx context.Context, timeout time.Duration) error {
	d := &appsv1.Deployment{}
	d.Namespace, d.Name = OperatorNamespace, OperatorDeployment
	if err := e.Client.Delete(ctx, d, client.PropagationPolicy("Foreground")); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete deployment %s/%s: %w", OperatorNamespace, OperatorDeployment, err)
	}
	return poll(ctx, timeout, func() (bool, error) {
		var list corev1.PodList
		if err := e.Client.List(ctx, &list, client.InNamespace(OperatorNamespace), client.MatchingLabels(install.Deployment(install.Options{}).Spec.Selector.MatchLabels)); err != nil {
			return false, err
		}
		if len(list.Items) > 0 {
			return false, fmt.Errorf("%d operator pods still exist", len(list.Items))
		}
		return true, nil
	})
}

// WaitWebhookRefuses waits until a PrometheusRule whose expression does not parse is
// refused by the operator's webhook (a server-side dry run, so nothing is stored): the
// apiserver reaches a webhook pod on the node with the CA the operator injected. The
// base's failurePolicy is Ignore, so until then the dry run passes.
func (e *Env) WaitWebhookRefuses(ctx context.Context, ns string, timeout time.Duration) (string, error) {
	var refusal string
	err := poll(ctx, timeout, func() (bool, error) {
		rule := &monitoringv1.PrometheusRule{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "does-not-parse"},
			Spec: monitoringv1.PrometheusRuleSpec{Groups: []monitoringv1.RuleGroup{{
				Name:  "broken",
				Rules: []monitoringv1.Rule{{Record: "broken:sum", Expr: intstr.FromString("sum(")}},
			}}},
		}
		err := e.Client.Create(ctx, rule, client.DryRunAll)
		if err == nil {
			return false, fmt.Errorf("a PrometheusRule with expr %q was admitted", "sum(")
		}
		if !strings.Contains(err.Error(), "denied the request") {
			return false, err
		}
		refusal = err.Error()
		return true, nil
	})
	return refusal, err
}
