package controller

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	postgresv1beta1 "github.com/lookout-operator/lookout/api/postgres/v1beta1"
	pgrender "github.com/lookout-operator/lookout/internal/render/postgres"
)

// minorUpgradeStatus sets the MinorUpgrade condition from the versions
// just observed: True while the instances move to the spec's image, False
// (Upgraded) with the time it took once they all run it.
func (k postgresKind) minorUpgradeStatus(c *postgresv1beta1.PostgresCluster) {
	if cond := pgrender.MinorUpgradeCondition(c, pgrender.InstanceImage(c, k.opts.Image), time.Now()); cond != nil {
		cond.ObservedGeneration = c.Generation
		meta.SetStatusCondition(&c.Status.Conditions, *cond)
	}
}
