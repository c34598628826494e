package integration

import (
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// EC2 discovery with its access key pair in a Secret, end to end: while the Secret is missing
// the ScrapeConfig alone is rejected (its binding and a Warning Event name the field and the
// Secret) and the other ScrapeConfig ships; once it exists the keys are inlined in the job, and
// a change to the Secret reaches the config with no change to the ScrapeConfig.
func TestEC2DiscoveryFollowsItsSecret(t *testing.T) {
	ns := newNamespace(t)
	key := func(k string) *corev1.SecretKeySelector {
		return &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "aws"}, Key: k}
	}
	ec2 := &monitoringv1alpha1.ScrapeConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ec2", Labels: map[string]string{"team": "a"}},
		Spec: monitoringv1alpha1.ScrapeConfigSpec{EC2SDConfigs: []monitoringv1alpha1.EC2SDConfig{{
			Region: ptrTo("eu-west-1"), AccessKey: key("access"), SecretKey: key("secret"), Port: ptrTo[int32](9100),
			Filters: monitoringv1alpha1.Filters{{Name: "tag:monitoring", Values: []string{"on"}}},
		}}},
	}
	static := &monitoringv1alpha1.ScrapeConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "static", Labels: map[string]string{"team": "a"}},
		Spec: monitoringv1alpha1.ScrapeConfigSpec{StaticConfigs: []monitoringv1alpha1.StaticConfig{{
			Targets: []monitoringv1alpha1.Target{"node-exporter.example:9100"},
		}}},
	}
	mustCreate(t, ec2)
	mustCreate(t, static)
	mustCreate(t, newPrometheus(ns, "main", func(p *monitoringv1.Prometheus) {
		p.Spec.ScrapeConfigSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}
	}))

	eventually(t, "the EC2 ScrapeConfig is rejected for its missing Secret while the other one ships", func() (bool, error) {
		cfg, err := configOf(ns, "main")
		if err != nil || !slices.Contains(jobsIn(cfg), "scrapeConfig/"+ns+"/static") || slices.Contains(jobsIn(cfg), "scrapeConfig/"+ns+"/ec2") {
			return false, nil
		}
		if err := k8s.Get(testCtx, client.ObjectKeyFromObject(ec2), ec2); err != nil {
			return false, err
		}
		c := acceptedBy(&ec2.Status, ns, "main")
		return c != nil && c.Status == monitoringv1.ConditionFalse && c.Reason == "SecretNotFound" &&
			strings.Contains(c.Message, "ec2SDConfigs[0].accessKey: Secret "+ns+"/aws not found"), nil
	})
	eventually(t, "a Warning Event on the ScrapeConfig says why", func() (bool, error) {
		return eventFor(t, ns, "ec2", "SecretNotFound"), nil
	})

	creds := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "aws"},
		StringData: map[string]string{"access": "AKIAFIRST", "secret": "first-s3cret"}}
	mustCreate(t, creds)
	eventually(t, "the Secret's keys are inlined in the EC2 job and the ScrapeConfig is accepted", func() (bool, error) {
		cfg, err := configOf(ns, "main")
		if err != nil || !strings.Contains(cfg, "ec2_sd_configs:") || !strings.Contains(cfg, "access_key: AKIAFIRST\n") ||
			!strings.Contains(cfg, "secret_key: first-s3cret\n") || !strings.Contains(cfg, "name: tag:monitoring\n") {
			return false, nil
		}
		if err := k8s.Get(testCtx, client.ObjectKeyFromObject(ec2), ec2); err != nil {
			return false, err
		}
		c := acceptedBy(&ec2.Status, ns, "main")
		return c != nil && c.Status == monitoringv1.ConditionTrue, nil
	})

	update(t, creds, func(s *corev1.Secret) {
		s.Data = nil
		s.StringData = map[string]string{"access": "AKIASECOND", "secret": "second-s3cret"}
	})
	eventually(t, "a change to the Secret reaches the config", func() (bool, error) {
		cfg, err := configOf(ns, "main")
		return err == nil && strings.Contains(cfg, "access_key: AKIASECOND\n") && strings.Contains(cfg, "secret_key: second-s3cret\n") &&
			!strings.Contains(cfg, "first-s3cret"), nil
	})
}
