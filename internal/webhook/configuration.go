package webhook

import (
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	admissionregistrationv1ac "k8s.io/client-go/applyconfigurations/admissionregistration/v1"
)

// caInjectAnnotation asks cert-manager's cainjector to fill caBundle.
const caInjectAnnotation = "cert-manager.io/inject-ca-from"

// desiredConfiguration is the whole ValidatingWebhookConfiguration: one
// webhook per kind. caBundle nil leaves the field to someone else (the
// cainjector, or a hand-written value): an apply that omits it drops
// Lookout's ownership instead of clearing another owner's value.
func desiredConfiguration(o Options, caBundle []byte) *admissionregistrationv1ac.ValidatingWebhookConfigurationApplyConfiguration {
	cfg := admissionregistrationv1ac.ValidatingWebhookConfiguration(o.ConfigurationName).
		WithLabels(map[string]string{
			"app.kubernetes.io/name":       "lookout",
			"app.kubernetes.io/managed-by": "lookout",
		})
	if !o.ManageCerts && o.CAInjectFrom != "" {
		cfg.WithAnnotations(map[string]string{caInjectAnnotation: o.CAInjectFrom})
	}
	for _, k := range o.servedKinds() {
		cc := admissionregistrationv1ac.WebhookClientConfig()
		if o.URL != "" {
			cc.WithURL(strings.TrimSuffix(o.URL, "/") + k.path())
		} else {
			cc.WithService(admissionregistrationv1ac.ServiceReference().
				WithNamespace(o.Namespace).
				WithName(o.ServiceName).
				WithPort(o.ServicePort).
				WithPath(k.path()))
		}
		if caBundle != nil {
			cc.WithCABundle(caBundle...)
		}
		rule := admissionregistrationv1ac.RuleWithOperations().
			WithOperations(admissionregistrationv1.Create, admissionregistrationv1.Update).
			WithAPIGroups(k.apiGroup()).
			WithAPIVersions(k.versions...).
			WithResources(k.resource).
			WithScope(admissionregistrationv1.NamespacedScope)
		cfg.WithWebhooks(admissionregistrationv1ac.ValidatingWebhook().
			WithName(k.webhookName()).
			WithClientConfig(cc).
			WithRules(rule).
			WithFailurePolicy(o.FailurePolicy).
			WithMatchPolicy(admissionregistrationv1.Equivalent).
			WithSideEffects(admissionregistrationv1.SideEffectClassNone).
			WithTimeoutSeconds(o.TimeoutSeconds).
			WithAdmissionReviewVersions("v1"))
	}
	return cfg
}

// Configuration is the ValidatingWebhookConfiguration the operator applies
// for opts, without a CA bundle (the operator or cert-manager adds it): the
// install manifests ship it so that removing the install removes it.
func Configuration(opts Options) *admissionregistrationv1ac.ValidatingWebhookConfigurationApplyConfiguration {
	opts.setDefaults()
	return desiredConfiguration(opts, nil)
}

// caBundleOnly is the part of a shipped configuration the operator owns: the
// CA bundle of each of its webhooks, by name (webhooks is a list keyed by
// name, so the other fields stay the install's).
func caBundleOnly(o Options, shipped *admissionregistrationv1.ValidatingWebhookConfiguration, caBundle []byte) *admissionregistrationv1ac.ValidatingWebhookConfigurationApplyConfiguration {
	cfg := admissionregistrationv1ac.ValidatingWebhookConfiguration(o.ConfigurationName)
	for _, w := range shipped.Webhooks {
		cfg.WithWebhooks(admissionregistrationv1ac.ValidatingWebhook().
			WithName(w.Name).
			WithClientConfig(admissionregistrationv1ac.WebhookClientConfig().WithCABundle(caBundle...)))
	}
	return cfg
}
