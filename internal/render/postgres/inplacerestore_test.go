package postgres_test

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	postgresv1beta1 "github.com/lookout-operator/lookout/api/postgres/v1beta1"
	"github.com/lookout-operator/lookout/internal/pgcontract"
	pg "github.com/lookout-operator/lookout/internal/render/postgres"
)

func inPlace(repo string, options ...string) *postgresv1beta1.PGBackRestRestore {
	return &postgresv1beta1.PGBackRestRestore{Enabled: ptr.To(true),
		PostgresClusterDataSource: postgresv1beta1.PostgresClusterDataSource{RepoName: repo, Options: options}}
}

// An in-place restore reaches the instance managers while it is enabled
// and the annotation holds a value the status does not record as
// finished: PGO's flow.
func TestAnInPlaceRestoreIsAskedForOncePerAnnotationValue(t *testing.T) {
	options := []string{"--type=time", "--target=2026-11-29 03:00:00+00"}
	for _, tc := range []struct {
		name       string
		enabled    bool
		annotation string
		finished   *postgresv1beta1.PGBackRestJobStatus
		want       bool
	}{
		{"asks for it when enabled and annotated", true, "one", nil, true},
		{"does not without the annotation", true, "", nil, false},
		{"does not while disabled", false, "one", nil, false},
		{"does not again once the value is finished", true, "one", &postgresv1beta1.PGBackRestJobStatus{ID: "one", Finished: true, Succeeded: 1}, false},
		{"does not again once the value was refused", true, "one", &postgresv1beta1.PGBackRestJobStatus{ID: "one", Finished: true, Failed: 1}, false},
		{"asks for a new value after a finished one", true, "two", &postgresv1beta1.PGBackRestJobStatus{ID: "one", Finished: true, Succeeded: 1}, true},
		{"keeps asking while the value runs", true, "one", &postgresv1beta1.PGBackRestJobStatus{ID: "one", Active: 1}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := hippo(withBackups)
			c.Spec.Backups.PGBackRest.Restore = inPlace("repo1", options...)
			c.Spec.Backups.PGBackRest.Restore.Enabled = ptr.To(tc.enabled)
			if tc.annotation != "" {
				c.Annotations = map[string]string{postgresv1beta1.AnnotationPGBackRestRestore: tc.annotation}
			}
			c.Status.PGBackRest = &postgresv1beta1.PGBackRestStatus{Restore: tc.finished}
			got := render(t, inputs(t, c, 1)).Config.InPlaceRestore
			if (got != nil) != tc.want {
				t.Fatalf("Config.InPlaceRestore %+v, want one: %v", got, tc.want)
			}
			if got != nil && (got.ID != tc.annotation || got.Repo != "repo1" || !slices.Equal(got.Options, options)) {
				t.Errorf("Config.InPlaceRestore %+v", got)
			}
		})
	}
}

// The primary's step is the PGBackRestRestoreProgressing condition's
// reason while it runs; a refusal or the Lease's record of the restore
// done finish status.pgbackrest.restore, which then stays as it was.
func TestAnInPlaceRestoreReportsEachStep(t *testing.T) {
	c := hippo(withBackups)
	c.Spec.Backups.PGBackRest.Restore = inPlace("repo1")
	c.Annotations = map[string]string{postgresv1beta1.AnnotationPGBackRestRestore: "one"}
	const primary, replica = "hippo-instance1-abcd-0", "hippo-instance1-efgh-0"
	step := func(id, step, reason string) *pgcontract.InPlaceRestoreStatus {
		return &pgcontract.InPlaceRestoreStatus{ID: id, Step: step, Reason: reason}
	}
	report := func(p, r *pgcontract.Status) *metav1.Condition {
		t.Helper()
		obs := pg.Observed{Instances: map[string]*pgcontract.Status{primary: p, replica: r}}
		pg.BackupStatus(c, obs, &c.Status)
		cond := pg.InPlaceRestoreStatus(c, obs, &c.Status)
		if cond != nil {
			meta.SetStatusCondition(&c.Status.Conditions, *cond)
		}
		return cond
	}
	cond := report(&pgcontract.Status{InPlaceRestore: step("one", pgcontract.RestoreRestoring, "pgbackrest restore --delta from repo1")},
		&pgcontract.Status{InPlaceRestore: step("one", pgcontract.RestoreStopped, "waiting")})
	if cond == nil || cond.Status != metav1.ConditionTrue || cond.Reason != pgcontract.RestoreRestoring || !strings.Contains(cond.Message, "--delta") {
		t.Fatalf("while restoring: %+v", cond)
	}
	if r := c.Status.PGBackRest.Restore; r == nil || r.ID != "one" || r.Finished || r.Active != 1 {
		t.Errorf("status.pgbackrest.restore while restoring: %+v", r)
	}
	cond = report(&pgcontract.Status{LastRestore: "one", InPlaceRestore: step("one", pgcontract.RestoreDone, "")}, &pgcontract.Status{})
	if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != pg.ReasonRestored {
		t.Fatalf("once done: %+v", cond)
	}
	if r := c.Status.PGBackRest.Restore; r == nil || !r.Finished || r.Succeeded != 1 {
		t.Errorf("status.pgbackrest.restore once done: %+v", r)
	}
	if got := render(t, inputs(t, c, 1)).Config.InPlaceRestore; got != nil {
		t.Errorf("a finished restore is asked for again: %+v", got)
	}
	// The next status, with nothing left to report, keeps it.
	if cond := report(&pgcontract.Status{}, &pgcontract.Status{}); cond != nil || c.Status.PGBackRest.Restore == nil || !c.Status.PGBackRest.Restore.Finished {
		t.Errorf("after: condition %+v, restore %+v", cond, c.Status.PGBackRest.Restore)
	}

	c.Annotations[postgresv1beta1.AnnotationPGBackRestRestore] = "two"
	reason := `target time 2026-11-28T19:00:00Z is before the first backup of stanza "db" ended`
	cond = report(&pgcontract.Status{LastRestore: "one", InPlaceRestore: step("two", pgcontract.RestoreRefused, reason)}, &pgcontract.Status{})
	if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != pg.ReasonRestoreRefused || !strings.Contains(cond.Message, reason) {
		t.Fatalf("refused: %+v", cond)
	}
	if r := c.Status.PGBackRest.Restore; r == nil || r.ID != "two" || !r.Finished || r.Failed != 1 {
		t.Errorf("status.pgbackrest.restore refused: %+v", r)
	}
}
