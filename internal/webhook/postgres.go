package webhook

import (
	"errors"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	postgresv1beta1 "github.com/lookout-operator/lookout/api/postgres/v1beta1"
	pgrender "github.com/lookout-operator/lookout/internal/render/postgres"
	"github.com/lookout-operator/lookout/internal/render/workload"
)

// postgresKind is the webhook of PGO's PostgresCluster.
var postgresKind = kindSpec{kind: postgresv1beta1.Kind, resource: "postgresclusters",
	versions: []string{postgresv1beta1.GroupVersion.Version}, group: postgresv1beta1.GroupVersion.Group}

// ValidatePostgresCluster refuses what the controller would refuse without
// reading the cluster: a field Lookout does not honour, a major not
// installed, no instances, a volume without a storage request, an unknown or
// manager-owned parameter, a reserved role name, a Failover without target.
// What needs the running cluster (a shrink, a target that is no instance) is
// the controller's to report.
func ValidatePostgresCluster(c *postgresv1beta1.PostgresCluster, inst pgrender.Installation) field.ErrorList {
	err := pgrender.Validate(c, inst)
	if err == nil {
		return nil
	}
	var se *workload.SpecError
	if !errors.As(err, &se) {
		return field.ErrorList{field.InternalError(field.NewPath("spec"), err)}
	}
	path := field.NewPath(se.Field)
	if se.Reason == workload.ReasonUnsupportedField {
		return field.ErrorList{field.Forbidden(path, se.Message)}
	}
	return field.ErrorList{{Type: field.ErrorTypeInvalid, Field: path.String(), BadValue: field.OmitValueType{}, Detail: se.Reason + ": " + strings.TrimPrefix(se.Message, se.Field+": ")}}
}
