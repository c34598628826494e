package controller

import (
	"fmt"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lookout-operator/lookout/internal/render/scrape"
)

// eventLog records Events as "<object> <reason>".
type eventLog struct{ got []string }

func (l *eventLog) Eventf(regarding, _ runtime.Object, _, reason, _, _ string, _ ...interface{}) {
	l.got = append(l.got, regarding.(client.Object).GetName()+" "+reason)
}

func (l *eventLog) AnnotatedEventf(regarding, related runtime.Object, annotations map[string]string, eventtype, reason, action, note string, args ...interface{}) {
	l.Eventf(regarding, related, eventtype, reason, action, note, args...)
}

func TestVerdictEventsOnlyWhenARejectionAppearsChangesOrEnds(t *testing.T) {
	p := &monitoringv1.Prometheus{ObjectMeta: metav1.ObjectMeta{Namespace: "mon", Name: "main"}}
	selected := map[objectKey]client.Object{}
	for _, n := range []string{"a", "b", "c"} {
		selected[verdictKey(monitoringv1.ServiceMonitorsKind, "ns", n)] = &monitoringv1.ServiceMonitor{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: n}}
	}
	v := func(name string, accepted bool, reason string) scrape.Verdict {
		return scrape.Verdict{Kind: monitoringv1.ServiceMonitorsKind, Namespace: "ns", Name: name, Accepted: accepted, Reason: reason, Message: reason}
	}
	log := &eventLog{}
	// The Prometheus's memory of the verdicts last reported, kept across reconciles.
	var last []scrape.Verdict
	var known bool
	step := func(what string, verdicts []scrape.Verdict, want ...string) {
		t.Helper()
		log.got = nil
		reportVerdicts(log, p, monitoringv1.PrometheusesKind, &last, &known, verdicts, indexed(selected))
		if fmt.Sprint(log.got) != fmt.Sprint(want) {
			t.Errorf("%s: events %v, want %v", what, log.got, want)
		}
	}
	step("first render: a rejection is reported, acceptances are quiet",
		[]scrape.Verdict{v("a", true, ""), v("b", false, "InvalidRegex")}, "b InvalidRegex")
	step("nothing changed", []scrape.Verdict{v("a", true, ""), v("b", false, "InvalidRegex")})
	step("a new monitor accepted, quiet", []scrape.Verdict{v("a", true, ""), v("b", false, "InvalidRegex"), v("c", true, "")})
	step("another reason", []scrape.Verdict{v("a", true, ""), v("b", false, "SecretNotFound"), v("c", true, "")}, "b SecretNotFound")
	step("accepted again, and an accepted one rejected",
		[]scrape.Verdict{v("a", false, "InvalidPort"), v("b", true, ""), v("c", true, "")}, "a InvalidPort", "b "+ReasonAccepted)
	step("accepted with a warning (a field dropped): a Warning once",
		[]scrape.Verdict{v("a", true, "FieldsDroppedForVersion"), v("b", true, ""), v("c", true, "")}, "a FieldsDroppedForVersion")
	step("the same warning again, quiet",
		[]scrape.Verdict{v("a", true, "FieldsDroppedForVersion"), v("b", true, ""), v("c", true, "")})
	step("the warning gone: accepted",
		[]scrape.Verdict{v("a", true, ""), v("b", true, ""), v("c", true, "")}, "a "+ReasonAccepted)
}
