package controller

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/lookout-operator/lookout/internal/render/scrape"
)

// reportVerdicts emits an Event on a selected object when owner's verdict on it
// changes: rejected, or accepted again. last and known are owner's memory of
// the verdicts last reported: verdicts itself is kept, as a render's verdicts are
// never changed once returned. selected is asked only for the objects an Event is due on.
func reportVerdicts(rec recorder.EventRecorder, owner client.Object, ownerKind string, last *[]scrape.Verdict, known *bool, verdicts []scrape.Verdict, selected finder) {
	prev := *last
	if *known && slices.Equal(prev, verdicts) {
		return // the usual reconcile: no verdict changed
	}
	*last, *known = verdicts, true

	// Only rejections make Events worth comparing with: a rejection that is
	// new or different, and an acceptance after a rejection. Accepted is the
	// normal case and stays quiet. So only the last rejections are indexed.
	// An acceptance with a warning (a Reason) counts as a rejection here.
	notable := func(v scrape.Verdict) bool { return !v.Accepted || v.Reason != "" }
	rejected := map[objectKey]scrape.Verdict{}
	for _, v := range prev {
		if notable(v) {
			rejected[verdictKey(v.Kind, v.Namespace, v.Name)] = v
		}
	}
	var due []scrape.Verdict
	for _, v := range verdicts {
		if !notable(v) && len(rejected) == 0 {
			continue
		}
		old, wasRejected := rejected[verdictKey(v.Kind, v.Namespace, v.Name)]
		if !notable(v) && !wasRejected {
			continue // accepted before too, or new
		}
		if notable(v) && wasRejected && old.Accepted == v.Accepted && old.Reason == v.Reason && old.Message == v.Message {
			continue // the same rejection as before
		}
		due = append(due, v)
	}
	if len(due) == 0 {
		return
	}
	keys := make([]objectKey, len(due))
	for i, v := range due {
		keys[i] = verdictKey(v.Kind, v.Namespace, v.Name)
	}
	found := selected(keys)
	for i, v := range due {
		obj := found[keys[i]]
		if obj == nil {
			continue
		}
		if v.Accepted && v.Reason != "" {
			rec.Eventf(obj, owner, corev1.EventTypeWarning, v.Reason, "Select",
				"Accepted by %s %s/%s with a warning: %s", ownerKind, owner.GetNamespace(), owner.GetName(), v.Message)
			continue
		}
		if v.Accepted {
			rec.Eventf(obj, owner, corev1.EventTypeNormal, ReasonAccepted, "Select",
				"Accepted by %s %s/%s", ownerKind, owner.GetNamespace(), owner.GetName())
			continue
		}
		rejections.WithLabelValues(v.Kind, v.Reason).Inc()
		rec.Eventf(obj, owner, corev1.EventTypeWarning, v.Reason, "Select",
			"Rejected by %s %s/%s: %s", ownerKind, owner.GetNamespace(), owner.GetName(), v.Message)
	}
}
