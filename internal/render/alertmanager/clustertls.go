package alertmanager

import (
	"fmt"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/lookout-operator/lookout/internal/render/workload"
)

// spec.clusterTLS: mutual TLS between the replicas' gossip, as prometheus-operator sets it
// up: a file for --cluster.tls-config in Secret alertmanager-<name>-cluster-tls-config,
// naming the server's and the client's certificates, which are projected from the Secrets
// and ConfigMaps the spec references.
const (
	clusterTLSConfigDir = "/etc/alertmanager/cluster_tls_config"
	clusterTLSServerDir = "/etc/alertmanager/cluster_tls/server"
	clusterTLSClientDir = "/etc/alertmanager/cluster_tls/client"
	// ClusterTLSConfigKey is the key of the file in the cluster TLS Secret.
	ClusterTLSConfigKey = "cluster-tls-config.yaml"

	volClusterTLSConfig = "cluster-tls-config"
	volClusterTLSServer = "cluster-tls-server"
	volClusterTLSClient = "cluster-tls-client"
)

// sinceClusterTLS is the release that added --cluster.tls-config.
var sinceClusterTLS = workload.Version{Minor: 24}

// ClusterTLSSecretName is the Secret holding the --cluster.tls-config file.
func ClusterTLSSecretName(name string) string { return "alertmanager-" + name + "-cluster-tls-config" }

// clusterClientAsWeb lays the client's files out as a web TLS config (certificate, key,
// CA as the client CA), so that they are projected and named as the server's are.
func clusterClientAsWeb(t *monitoringv1.SafeTLSConfig) *monitoringv1.WebTLSConfig {
	w := &monitoringv1.WebTLSConfig{Cert: t.Cert, ClientCA: t.CA}
	if t.KeySecret != nil {
		w.KeySecret = *t.KeySecret
	}
	return w
}

// clusterTLSClient is prometheus/common's TLS client config, as Alertmanager reads it.
type clusterTLSClient struct {
	CAFile             string `json:"ca_file,omitempty"`
	CertFile           string `json:"cert_file,omitempty"`
	KeyFile            string `json:"key_file,omitempty"`
	ServerName         string `json:"server_name,omitempty"`
	InsecureSkipVerify bool   `json:"insecure_skip_verify,omitempty"`
	MinVersion         string `json:"min_version,omitempty"`
	MaxVersion         string `json:"max_version,omitempty"`
}

// clusterTLSFile is the --cluster.tls-config file of am (spec.clusterTLS set).
func clusterTLSFile(am *monitoringv1.Alertmanager) ([]byte, error) {
	ct := am.Spec.ClusterTLS
	server, err := workload.WebConfigFileTLS(&monitoringv1.WebConfigFileFields{TLSConfig: &ct.ServerTLS}, clusterTLSServerDir)
	if err != nil {
		return nil, fmt.Errorf("spec.clusterTLS.server: %w", err)
	}
	files := workload.WebTLSPaths(clusterClientAsWeb(&ct.ClientTLS), clusterTLSClientDir)
	client := clusterTLSClient{
		CAFile: files.ClientCA, CertFile: files.Cert, KeyFile: files.Key,
		ServerName:         workload.Value(ct.ClientTLS.ServerName),
		InsecureSkipVerify: workload.Value(ct.ClientTLS.InsecureSkipVerify),
		MinVersion:         string(workload.Value(ct.ClientTLS.MinVersion)),
		MaxVersion:         string(workload.Value(ct.ClientTLS.MaxVersion)),
	}
	c, err := yaml.Marshal(map[string]clusterTLSClient{"tls_client_config": client})
	if err != nil {
		return nil, err
	}
	return append(server, c...), nil
}

// clusterTLSVolumes are the file's Secret and the projected certificates.
func clusterTLSVolumes(am *monitoringv1.Alertmanager) []corev1.Volume {
	ct := am.Spec.ClusterTLS
	if ct == nil {
		return nil
	}
	vols := []corev1.Volume{{Name: volClusterTLSConfig, VolumeSource: corev1.VolumeSource{
		Secret: &corev1.SecretVolumeSource{SecretName: ClusterTLSSecretName(am.Name)}}}}
	for _, v := range []*corev1.Volume{workload.WebTLSVolume(volClusterTLSServer, &ct.ServerTLS), workload.WebTLSVolume(volClusterTLSClient, clusterClientAsWeb(&ct.ClientTLS))} {
		if v != nil {
			vols = append(vols, *v)
		}
	}
	return vols
}

func clusterTLSMounts(am *monitoringv1.Alertmanager) []corev1.VolumeMount {
	dirs := map[string]string{volClusterTLSConfig: clusterTLSConfigDir, volClusterTLSServer: clusterTLSServerDir, volClusterTLSClient: clusterTLSClientDir}
	var out []corev1.VolumeMount
	for _, v := range clusterTLSVolumes(am) {
		out = append(out, corev1.VolumeMount{Name: v.Name, MountPath: dirs[v.Name], ReadOnly: true})
	}
	return out
}

func clusterTLSSecret(am *monitoringv1.Alertmanager, file []byte) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: ownedMeta(am, ClusterTLSSecretName(am.Name)),
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{ClusterTLSConfigKey: file},
	}
}
