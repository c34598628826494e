package prometheus

import (
	"fmt"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

func configSecret(p *monitoringv1.Prometheus, opts Options) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: ownedMeta(p, opts, ConfigSecretName(p.Name)),
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{ConfigSecretKey: opts.ConfigGzip},
	}
}

// webConfig is the file read by --web.config.file (the Prometheus exporter-toolkit format).
type webConfig struct {
	HTTPServerConfig *webHTTPServerConfig `json:"http_server_config,omitempty"`
}

type webHTTPServerConfig struct {
	HTTP2   *bool             `json:"http2,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
}

// webConfigFile renders spec.web's HTTP settings; with none it is "{}", a valid file that
// serves plain HTTP. TLS is refused by Validate for now.
func webConfigFile(p *monitoringv1.Prometheus) ([]byte, error) {
	var wc webConfig
	if w := p.Spec.Web; w != nil && w.HTTPConfig != nil {
		hc := &webHTTPServerConfig{HTTP2: w.HTTPConfig.HTTP2}
		if h := w.HTTPConfig.Headers; h != nil {
			hc.Headers = map[string]string{}
			for name, value := range map[string]string{
				"Content-Security-Policy":   h.ContentSecurityPolicy,
				"X-Frame-Options":           h.XFrameOptions,
				"X-Content-Type-Options":    h.XContentTypeOptions,
				"X-XSS-Protection":          h.XXSSProtection,
				"Strict-Transport-Security": h.StrictTransportSecurity,
			} {
				if value != "" {
					hc.Headers[name] = value
				}
			}
			if len(hc.Headers) == 0 {
				hc.Headers = nil
			}
		}
		if hc.HTTP2 != nil || hc.Headers != nil {
			wc.HTTPServerConfig = hc
		}
	}
	out, err := yaml.Marshal(wc)
	if err != nil {
		return nil, fmt.Errorf("marshal web config: %w", err)
	}
	return out, nil
}

func webConfigSecret(p *monitoringv1.Prometheus, opts Options) (*corev1.Secret, error) {
	data, err := webConfigFile(p)
	if err != nil {
		return nil, err
	}
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: ownedMeta(p, opts, WebConfigSecretName(p.Name)),
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{WebConfigSecretKey: data},
	}, nil
}
