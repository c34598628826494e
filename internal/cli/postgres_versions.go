package cli

import (
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/api/meta"

	postgresv1beta1 "github.com/lookout-operator/lookout/api/postgres/v1beta1"
)

// explainVersions prints the PostgreSQL each instance runs and where a
// rolling minor upgrade stands.
func explainVersions(s *postgresv1beta1.PostgresClusterStatus, out io.Writer) {
	if cond := meta.FindStatusCondition(s.Conditions, postgresv1beta1.ConditionMinorUpgrade); cond != nil {
		state := "done"
		if cond.Status == "True" {
			state = "IN PROGRESS (replicas one at a time, then a switchover, then the old primary)"
		}
		fmt.Fprintf(out, "  minor upgrade: %s — %s: %s\n", state, cond.Reason, cond.Message)
	}
	if len(s.InstanceVersions) == 0 {
		return
	}
	fmt.Fprintln(out, "  versions:")
	for _, v := range s.InstanceVersions {
		fmt.Fprintf(out, "    %s: PostgreSQL %s, image %s\n", v.Name, orDefault(v.Version, "(not answering)"), orDash(v.Image))
	}
}
