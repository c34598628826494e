package workload

import (
	"fmt"
	"path"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/exporter-toolkit/web"
	yamlv2 "go.yaml.in/yaml/v2"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// webConfig is the file read by --web.config.file (the exporter-toolkit format Prometheus
// and Alertmanager share).
type webConfig struct {
	TLSServerConfig  *webTLSServerConfig  `json:"tls_server_config,omitempty"`
	HTTPServerConfig *webHTTPServerConfig `json:"http_server_config,omitempty"`
}

type webTLSServerConfig struct {
	CertFile                 string   `json:"cert_file"`
	KeyFile                  string   `json:"key_file"`
	ClientCAFile             string   `json:"client_ca_file,omitempty"`
	ClientAuthType           string   `json:"client_auth_type,omitempty"`
	MinVersion               string   `json:"min_version,omitempty"`
	MaxVersion               string   `json:"max_version,omitempty"`
	CipherSuites             []string `json:"cipher_suites,omitempty"`
	PreferServerCipherSuites *bool    `json:"prefer_server_cipher_suites,omitempty"`
	CurvePreferences         []string `json:"curve_preferences,omitempty"`
}

type webHTTPServerConfig struct {
	HTTP2   *bool             `json:"http2,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
}

// WebConfigFile renders the web server's HTTP settings; with none it is "{}", a valid
// file that serves plain HTTP. A kind that serves TLS uses WebConfigFileTLS.
func WebConfigFile(w *monitoringv1.WebConfigFileFields) ([]byte, error) {
	return WebConfigFileTLS(w, "")
}

// WebConfigFileTLS is WebConfigFile with w.TLSConfig served from the files WebTLSVolume
// projects at tlsDir.
func WebConfigFileTLS(w *monitoringv1.WebConfigFileFields, tlsDir string) ([]byte, error) {
	var wc webConfig
	if w != nil && w.TLSConfig != nil {
		if tlsDir == "" {
			return nil, fmt.Errorf("web TLS needs a directory for its files")
		}
		t := w.TLSConfig
		paths := WebTLSPaths(t, tlsDir)
		wc.TLSServerConfig = &webTLSServerConfig{
			CertFile: paths.Cert, KeyFile: paths.Key, ClientCAFile: paths.ClientCA,
			ClientAuthType: Value(t.ClientAuthType), MinVersion: Value(t.MinVersion), MaxVersion: Value(t.MaxVersion),
			CipherSuites: t.CipherSuites, PreferServerCipherSuites: t.PreferServerCipherSuites, CurvePreferences: t.CurvePreferences,
		}
	}
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
	// Read back as the web server reads it (strictly, with its own types): TLS versions,
	// cipher suites and curves it does not know are refused here, not at its start.
	var parsed web.Config
	if err := yamlv2.UnmarshalStrict(out, &parsed); err != nil {
		return nil, fmt.Errorf("the web server refuses the generated web config: %w", err)
	}
	return out, nil
}

// WebTLSFiles are the paths of a web server's certificate, key and client CA ("" when none).
type WebTLSFiles struct {
	Cert, Key, ClientCA string
}

// WebTLSPaths says where the server finds each file of t: the given file path, or the file
// WebTLSVolume projects from the Secret or ConfigMap key into dir.
func WebTLSPaths(t *monitoringv1.WebTLSConfig, dir string) WebTLSFiles {
	pick := func(file *string, ref monitoringv1.SecretOrConfigMap) string {
		if file != nil && *file != "" {
			return *file
		}
		if name := webTLSFileName(ref.Secret, ref.ConfigMap); name != "" {
			return path.Join(dir, name)
		}
		return ""
	}
	out := WebTLSFiles{Cert: pick(t.CertFile, t.Cert), ClientCA: pick(t.ClientCAFile, t.ClientCA)}
	if t.KeyFile != nil && *t.KeyFile != "" {
		out.Key = *t.KeyFile
	} else if t.KeySecret.Name != "" {
		out.Key = path.Join(dir, webTLSFileName(&t.KeySecret, nil))
	}
	return out
}

// webTLSFileName is the file a Secret or ConfigMap key becomes in the projected volume:
// unique per object and key ("secret_<name>_<key>", "configmap_<name>_<key>"; object names
// have no "_").
func webTLSFileName(s *corev1.SecretKeySelector, cm *corev1.ConfigMapKeySelector) string {
	switch {
	case s != nil && s.Name != "":
		return "secret_" + s.Name + "_" + s.Key
	case cm != nil && cm.Name != "":
		return "configmap_" + cm.Name + "_" + cm.Key
	}
	return ""
}

// WebTLSVolume projects the Secret and ConfigMap keys t references into one volume (nil
// when t reads only files): the kubelet keeps them current, and the web server reads them
// again on every handshake, so a renewed certificate is served without a restart.
func WebTLSVolume(name string, t *monitoringv1.WebTLSConfig) *corev1.Volume {
	var sources []corev1.VolumeProjection
	seen := map[string]bool{}
	add := func(s *corev1.SecretKeySelector, cm *corev1.ConfigMapKeySelector) {
		file := webTLSFileName(s, cm)
		if file == "" || seen[file] {
			return
		}
		seen[file] = true
		if s != nil && s.Name != "" {
			sources = append(sources, corev1.VolumeProjection{Secret: &corev1.SecretProjection{
				LocalObjectReference: s.LocalObjectReference, Items: []corev1.KeyToPath{{Key: s.Key, Path: file}}}})
			return
		}
		sources = append(sources, corev1.VolumeProjection{ConfigMap: &corev1.ConfigMapProjection{
			LocalObjectReference: cm.LocalObjectReference, Items: []corev1.KeyToPath{{Key: cm.Key, Path: file}}}})
	}
	if t.CertFile == nil || *t.CertFile == "" {
		add(t.Cert.Secret, t.Cert.ConfigMap)
	}
	if t.KeyFile == nil || *t.KeyFile == "" {
		add(&t.KeySecret, nil)
	}
	if t.ClientCAFile == nil || *t.ClientCAFile == "" {
		add(t.ClientCA.Secret, t.ClientCA.ConfigMap)
	}
	if len(sources) == 0 {
		return nil
	}
	return &corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: sources}}}
}

// CheckWebTLS checks a web.tlsConfig at field: the API's own rules, and client
// authentication the kubelet's probes and the reloader could not pass (they have no client
// certificate).
func CheckWebTLS(field string, t *monitoringv1.WebTLSConfig) *SpecError {
	if t == nil {
		return nil
	}
	if err := t.Validate(); err != nil {
		return Invalid(field, "%v", err)
	}
	if a := Value(t.ClientAuthType); a != "" {
		switch a {
		case "NoClientCert", "RequestClientCert", "VerifyClientCertIfGiven":
		case "RequireAnyClientCert", "RequireAndVerifyClientCert":
			return Unsupported(field+".clientAuthType", a+" would lock out the kubelet's probes and the config reloader, which have no client certificate; use VerifyClientCertIfGiven")
		default:
			return Invalid(field+".clientAuthType", "%q is not one of NoClientCert, RequestClientCert, RequireAnyClientCert, VerifyClientCertIfGiven, RequireAndVerifyClientCert", a)
		}
	}
	return nil
}
