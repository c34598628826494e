package install

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// FieldOwner is the field manager of what the operator applies at start.
const FieldOwner = "lookout"

// SelfMonitoringObjects are the custom resources of the self-monitoring: the
// ServiceMonitor of the operator, the PodMonitor of the reloaders and the
// alerts. The operator applies them itself (--self-monitoring) instead of the
// install: kubectl maps every object of an apply before it creates any, so a
// stream holding both the CRDs and objects of their kinds fails on a cluster
// that has no CRDs yet, and the Helm chart's CRDs come from the operator.
func SelfMonitoringObjects(o Options) []client.Object {
	o.defaults()
	return []client.Object{ServiceMonitor(o), ReloaderPodMonitor(o), PrometheusRule(o)}
}

// SelfMonitoring applies SelfMonitoringObjects when the operator starts
// leading, retrying until their CRDs are served: a manager.Runnable.
type SelfMonitoring struct {
	Client  client.Client
	Options Options
	Log     logr.Logger
	// Retry is the wait between attempts (default 5s).
	Retry time.Duration
}

// Start applies the objects, then returns.
func (s SelfMonitoring) Start(ctx context.Context) error {
	retry := s.Retry
	if retry == 0 {
		retry = 5 * time.Second
	}
	var last error
	err := wait.PollUntilContextCancel(ctx, retry, true, func(ctx context.Context) (bool, error) {
		if last = ApplySelfMonitoring(ctx, s.Client, s.Options); last != nil {
			s.Log.Info("Self-monitoring objects not applied yet; retrying", "error", last.Error())
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		// The operator is stopping: not an error of its own.
		return nil
	}
	s.Log.Info("Applied the self-monitoring objects", "namespace", s.Options.Namespace)
	return nil
}

// ApplySelfMonitoring server-side applies SelfMonitoringObjects; the
// apiserver writes nothing when they are unchanged.
func ApplySelfMonitoring(ctx context.Context, c client.Client, o Options) error {
	for _, obj := range SelfMonitoringObjects(o) {
		if err := c.Patch(ctx, obj, client.Apply, client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil { //nolint:staticcheck // typed objects of another project's API: no apply configurations
			return fmt.Errorf("apply %s %s/%s: %w", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetNamespace(), obj.GetName(), err)
		}
	}
	return nil
}
