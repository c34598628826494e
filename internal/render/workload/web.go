package workload

import (
	"fmt"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"sigs.k8s.io/yaml"
)

// webConfig is the file read by --web.config.file (the exporter-toolkit format Prometheus
// and Alertmanager share).
type webConfig struct {
	HTTPServerConfig *webHTTPServerConfig `json:"http_server_config,omitempty"`
}

type webHTTPServerConfig struct {
	HTTP2   *bool             `json:"http2,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
}

// WebConfigFile renders the web server's HTTP settings; with none it is "{}", a valid
// file that serves plain HTTP. TLS is refused by the kinds' validation for now.
func WebConfigFile(w *monitoringv1.WebConfigFileFields) ([]byte, error) {
	var wc webConfig
	if w != nil && w.HTTPConfig != nil {
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
