package e2e

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lookout-operator/lookout/internal/controlplane"
	amrender "github.com/lookout-operator/lookout/internal/render/alertmanager"
	"github.com/lookout-operator/lookout/internal/testhost"
)

// kube-prometheus releases pinned Alertmanager v0.28.1 with three replicas. The
// replicas run the real v0.28.1 binary with exactly the args Lookout generates for
// them: a flag that release does not know (--cluster.peer-name arrived in v0.30) would
// stop each one at start. They must become ready and form one cluster of three.
func TestAThreeReplicaAlertmanagerV0281StartsAndClustersWithTheGeneratedArgs(t *testing.T) {
	old, err := controlplane.AlertmanagerOld.Ensure(testCtx, nil)
	if err != nil {
		t.Fatal(err)
	}
	ns := "e2e-am-v0281"
	mustCreate(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	network, err := testhost.NewNetwork()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(network.Close)
	mustCreate(t, &monitoringv1.Alertmanager{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "main"},
		Spec: monitoringv1.AlertmanagerSpec{
			Version:  "0.28.1",
			Image:    ptr.To("quay.io/prometheus/alertmanager:v0.28.1"),
			Replicas: ptr.To[int32](3),
			// Set by kube-prometheus's Alertmanager; a v0.28 release knows both flags.
			LogLevel:       "debug",
			EnableFeatures: []string{"receiver-name-in-metrics"},
		},
	})

	oldBins := bins
	oldBins.Alertmanager = old
	am := runAlertmanagerPods(t, network, ns, "main", oldBins)

	var sts appsv1.StatefulSet
	if err := k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: amrender.StatefulSetName("main")}, &sts); err != nil {
		t.Fatal(err)
	}
	args := sts.Spec.Template.Spec.Containers[0].Args
	for _, a := range args {
		if strings.HasPrefix(a, "--cluster.peer-name") {
			t.Errorf("the StatefulSet gives v0.28.1 %s, a flag of v0.30", a)
		}
	}
	if !slices.Contains(args, "--cluster.label="+ns+"/main") {
		t.Errorf("args lack --cluster.label (v0.26+): %v", args)
	}

	for i := range am.IPs() {
		waitFor(t, fmt.Sprintf("replica %d runs v0.28.1 and is in a settled cluster of 3", i), func() bool {
			var st struct {
				Cluster struct {
					Status string            `json:"status"`
					Peers  []json.RawMessage `json:"peers"`
				} `json:"cluster"`
				VersionInfo struct {
					Version string `json:"version"`
				} `json:"versionInfo"`
			}
			err := tryJSON(am.URL(i, "/api/v2/status"), &st)
			return err == nil && st.VersionInfo.Version == "0.28.1" && st.Cluster.Status == "ready" && len(st.Cluster.Peers) == 3
		})
	}
	waitFor(t, "the Alertmanager says Reconciled=True", func() bool {
		var got monitoringv1.Alertmanager
		if err := k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: "main"}, &got); err != nil {
			return false
		}
		for _, c := range got.Status.Conditions {
			if c.Type == monitoringv1.Reconciled {
				return c.Status == monitoringv1.ConditionTrue
			}
		}
		return false
	})
}
