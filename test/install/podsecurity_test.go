package install

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lookout-operator/lookout/internal/install"
)

// A Deployment is only warned about; the Pod it creates is what Pod Security
// admission refuses. So the pod template is dry-run as a Pod.
func TestTheOperatorPodPassesPodSecurityRestricted(t *testing.T) {
	ns := install.Namespace(install.Options{})
	if got := ns.Labels["pod-security.kubernetes.io/enforce"]; got != "restricted" {
		t.Fatalf("the install's namespace enforces %q, want restricted", got)
	}
	// The pods name the install's ServiceAccount, which admission looks up.
	if err := k8s.Create(testCtx, install.ServiceAccount(install.Options{})); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	for _, o := range []install.Options{{}, {CertManager: true}, {NoWebhook: true}} {
		d := install.Deployment(o)
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, GenerateName: "lookout-", Labels: d.Spec.Template.Labels},
			Spec:       d.Spec.Template.Spec,
		}
		if err := k8s.Create(testCtx, pod, client.DryRunAll); err != nil {
			t.Errorf("the operator's pod (%+v) is refused in a restricted namespace: %v", o, err)
		}
	}

	// The namespace does enforce: a pod that runs as root is refused.
	root := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "root"},
		Spec:       corev1.PodSpec{ServiceAccountName: install.Name, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
	err := k8s.Create(testCtx, root, client.DryRunAll)
	if err == nil || !strings.Contains(err.Error(), "restricted") {
		t.Fatalf("a pod without a securityContext was not refused by Pod Security in %s: %v", ns.Name, err)
	}
}
