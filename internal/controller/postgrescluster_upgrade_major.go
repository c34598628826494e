package controller

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	postgresv1beta1 "github.com/lookout-operator/lookout/api/postgres/v1beta1"
	pgrender "github.com/lookout-operator/lookout/internal/render/postgres"
)

// majorUpgradeCondition sets the MajorUpgrade condition from
// status.majorUpgrade; each new step is an Event (a Warning when the
// upgrade failed and the old major runs on).
func (k postgresKind) majorUpgradeCondition(c *postgresv1beta1.PostgresCluster) {
	cond := pgrender.MajorUpgradeCondition(c)
	if cond == nil {
		return
	}
	prev := meta.FindStatusCondition(c.Status.Conditions, cond.Type)
	if k.rec != nil && (prev == nil || prev.Reason != cond.Reason) {
		typ := corev1.EventTypeNormal
		if cond.Status == metav1.ConditionFalse {
			typ = corev1.EventTypeWarning
		}
		k.rec.Eventf(c, nil, typ, cond.Reason, "MajorUpgrade", "%s", cond.Message)
	}
	meta.SetStatusCondition(&c.Status.Conditions, *cond)
}
