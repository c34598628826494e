package prometheus

import (
	"github.com/lookout-operator/lookout/internal/render/workload"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func configSecret(p *monitoringv1.Prometheus, opts Options) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: ownedMeta(p, opts, FlavourOf(p).ConfigSecretName(p.Name)),
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{ConfigSecretKey: opts.ConfigGzip},
	}
}

func webConfigSecret(p *monitoringv1.Prometheus, opts Options) (*corev1.Secret, error) {
	var fields *monitoringv1.WebConfigFileFields
	if p.Spec.Web != nil {
		fields = &p.Spec.Web.WebConfigFileFields
	}
	data, err := workload.WebConfigFileTLS(fields, webTLSDir)
	if err != nil {
		return nil, err
	}
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: ownedMeta(p, opts, FlavourOf(p).WebConfigSecretName(p.Name)),
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{WebConfigSecretKey: data},
	}, nil
}
