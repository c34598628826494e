// Package scheme holds the runtime.Scheme with every type Lookout reads or
// writes: the Kubernetes built-ins, the monitoring.coreos.com kinds and
// PGO's PostgresCluster.
package scheme

import (
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	monitoringv1beta1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	postgresv1beta1 "github.com/lookout-operator/lookout/api/postgres/v1beta1"
)

// Scheme is shared by the operator, the CLI and the tests.
var Scheme = runtime.NewScheme()

func init() {
	utilruntime.Must(clientgoscheme.AddToScheme(Scheme))
	utilruntime.Must(monitoringv1.AddToScheme(Scheme))
	utilruntime.Must(monitoringv1alpha1.AddToScheme(Scheme))
	utilruntime.Must(monitoringv1beta1.AddToScheme(Scheme))
	utilruntime.Must(postgresv1beta1.AddToScheme(Scheme))
}
