package alertmanager

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/alertmanager/cluster"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func withClusterTLS(am *monitoringv1.Alertmanager) {
	sel := func(name, key string) corev1.SecretKeySelector {
		return corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key}
	}
	am.Spec.Replicas = ptr.To[int32](3)
	am.Spec.ClusterTLS = &monitoringv1.ClusterTLSConfig{
		ServerTLS: monitoringv1.WebTLSConfig{
			Cert:           monitoringv1.SecretOrConfigMap{Secret: ptr.To(sel("mesh-tls", "tls.crt"))},
			KeySecret:      sel("mesh-tls", "tls.key"),
			ClientCA:       monitoringv1.SecretOrConfigMap{ConfigMap: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "mesh-ca"}, Key: "ca.crt"}},
			ClientAuthType: ptr.To("RequireAndVerifyClientCert"),
		},
		ClientTLS: monitoringv1.SafeTLSConfig{
			CA:         monitoringv1.SecretOrConfigMap{ConfigMap: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "mesh-ca"}, Key: "ca.crt"}},
			Cert:       monitoringv1.SecretOrConfigMap{Secret: ptr.To(sel("mesh-tls", "tls.crt"))},
			KeySecret:  ptr.To(sel("mesh-tls", "tls.key")),
			ServerName: ptr.To("alertmanager-operated"),
		},
	}
}

// spec.clusterTLS: the --cluster.tls-config file Alertmanager's own loader reads names the
// projected certificates, and mutual TLS (client certificates required) is allowed.
func TestClusterTLSGivesTheReplicasMutualTLS(t *testing.T) {
	am := newAlertmanager(withClusterTLS)
	objs, err := Objects(am, options())
	if err != nil {
		t.Fatal(err)
	}
	var file []byte
	for _, o := range objs {
		if s, ok := o.(*corev1.Secret); ok && s.Name == ClusterTLSSecretName("main") {
			file = s.Data[ClusterTLSConfigKey]
		}
	}
	if file == nil {
		t.Fatal("no cluster TLS Secret")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, ClusterTLSConfigKey)
	if err := os.WriteFile(path, file, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := cluster.GetTLSTransportConfig(path)
	if err != nil {
		t.Fatalf("Alertmanager refuses the file: %v\n%s", err, file)
	}
	if cfg.TLSServerConfig.TLSCertPath != clusterTLSServerDir+"/secret_mesh-tls_tls.crt" || cfg.TLSServerConfig.ClientAuth != "RequireAndVerifyClientCert" ||
		cfg.TLSClientConfig.CAFile != clusterTLSClientDir+"/configmap_mesh-ca_ca.crt" || cfg.TLSClientConfig.ServerName != "alertmanager-operated" {
		t.Errorf("the file names other files:\n%s", file)
	}
	spec, err := podSpec(am, options())
	if err != nil {
		t.Fatal(err)
	}
	c := spec.Containers[0]
	if !slices.Contains(c.Args, "--cluster.tls-config="+clusterTLSConfigDir+"/"+ClusterTLSConfigKey) {
		t.Errorf("args lack --cluster.tls-config: %v", c.Args)
	}
	for _, dir := range []string{clusterTLSConfigDir, clusterTLSServerDir, clusterTLSClientDir} {
		if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == dir }) {
			t.Errorf("%s is not mounted", dir)
		}
	}
}

func TestClusterTLSBeforeV024IsRefused(t *testing.T) {
	err := Validate(newAlertmanager(withClusterTLS, func(am *monitoringv1.Alertmanager) { am.Spec.Version = "v0.23.0" }))
	if err == nil || !strings.Contains(err.Error(), "spec.clusterTLS") {
		t.Errorf("Validate = %v, want spec.clusterTLS refused on v0.23", err)
	}
}
