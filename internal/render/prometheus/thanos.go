package prometheus

import (
	"cmp"
	"path"
	"strconv"
	"strings"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/lookout-operator/lookout/internal/render/thanos"
	"github.com/lookout-operator/lookout/internal/render/workload"
)

// The Thanos sidecar (spec.thanos): a thanos-sidecar container in every Prometheus pod that
// serves the StoreAPI over gRPC and, with object storage configured, uploads the TSDB
// blocks Prometheus cuts.
const (
	containerThanosSidecar = "thanos-sidecar"
	thanosHTTPPortName     = "http"
	defaultThanosBlocks    = "2h"
)

// thanosFileConfigs are the sidecar's file-valued settings. The *File fields take
// precedence over the Secret references, as the API documents.
func thanosFileConfigs(t *monitoringv1.ThanosSpec) []thanos.FileConfig {
	objstore := thanos.FileConfig{Field: "spec.thanos.objectStorageConfig", Flag: "objstore.config", Env: "OBJSTORE_CONFIG",
		Secret: t.ObjectStorageConfig, File: workload.Value(t.ObjectStorageConfigFile)}
	tracing := thanos.FileConfig{Field: "spec.thanos.tracingConfig", Flag: "tracing.config", Env: "TRACING_CONFIG",
		Secret: t.TracingConfig, File: t.TracingConfigFile}
	out := []thanos.FileConfig{objstore, tracing}
	for i := range out {
		if out[i].File != "" {
			out[i].Secret = nil
		}
	}
	return out
}

// ThanosSecretKeys are the Secret keys the sidecar reads, for the caller to check before
// the pods fail on a missing one.
func ThanosSecretKeys(p *monitoringv1.Prometheus) []thanos.FileConfig {
	if p.Spec.Thanos == nil {
		return nil
	}
	var out []thanos.FileConfig
	for _, c := range thanosFileConfigs(p.Spec.Thanos) {
		if c.Secret != nil {
			out = append(out, c)
		}
	}
	return out
}

// thanosUploads: with object storage the sidecar ships every block Prometheus cuts.
func thanosUploads(p *monitoringv1.Prometheus) bool {
	return p.Spec.Thanos != nil && thanosFileConfigs(p.Spec.Thanos)[0].Set()
}

func thanosImage(t *monitoringv1.ThanosSpec) workload.ImageSpec {
	img := thanos.ImageSpec(t.Image, workload.Value(t.Version))
	img.BaseImage, img.Tag, img.SHA = workload.Value(t.BaseImage), workload.Value(t.Tag), workload.Value(t.SHA)
	return img
}

// thanosPrometheusArgs are what the sidecar needs of Prometheus when it uploads: blocks of
// one fixed size, never compacted into larger ones before they are shipped (the sidecar
// checks this and does not become ready otherwise). spec.disableCompaction asks for the same.
//
// Prometheus v3.9's --storage.tsdb.delay-compact-file.path, which would keep compaction on
// and skip only blocks not yet shipped, is not set: Thanos v0.41's sidecar requires the
// path to equal its --shipper.meta-file-name and then looks for that name below its
// --tsdb.path, so no value names the same file for both (the e2e test saw the sidecar
// refuse to become ready with it).
func thanosPrometheusArgs(p *monitoringv1.Prometheus) []string {
	size := ""
	switch {
	case thanosUploads(p):
		size = string(p.Spec.Thanos.BlockDuration)
		if size == "" {
			size = defaultThanosBlocks
		}
	case p.Spec.DisableCompaction:
		size = defaultThanosBlocks
	}
	if size == "" {
		return nil
	}
	return []string{"--storage.tsdb.min-block-duration=" + size, "--storage.tsdb.max-block-duration=" + size}
}

// thanosSidecarArgs are the sidecar's flags, then spec.thanos.additionalArgs.
func thanosSidecarArgs(p *monitoringv1.Prometheus) ([]string, []corev1.EnvVar) {
	t := p.Spec.Thanos
	grpcHost, httpHost := "", ""
	if t.ListenLocal || t.GRPCListenLocal {
		grpcHost = "127.0.0.1"
	}
	if t.ListenLocal || t.HTTPListenLocal {
		httpHost = "127.0.0.1"
	}
	args := []string{
		"sidecar",
		"--prometheus.url=" + strings.ToLower(string(webScheme(p))) + "://localhost:" + strconv.Itoa(webPort) + path.Clean(routePrefix(p)),
	}
	if webTLS(p) != nil {
		// Prometheus serves HTTPS only. Its certificate names the Service, not localhost,
		// and the sidecar has no CA to check it with: as the existing operator does, the
		// sidecar skips verification on this loopback connection.
		args = append(args, "--prometheus.http-client="+thanosHTTPClientConfig)
	}
	args = append(args,
		"--grpc-address="+grpcHost+":"+strconv.Itoa(thanos.GRPCPort),
		"--http-address="+httpHost+":"+strconv.Itoa(thanos.WebPort),
		"--tsdb.path="+storageDir,
	)
	var env []corev1.EnvVar
	for _, c := range thanosFileConfigs(t) {
		args, env = c.Apply(args, env)
	}
	tls, _ := thanos.GRPCServerTLSArgs("spec.thanos.grpcServerTlsConfig", t.GRPCServerTLSConfig, thanosVersion(t)) // Validate has refused the errors
	args = append(args, tls...)
	if t.MinTime != "" {
		args = append(args, "--min-time="+t.MinTime)
	}
	for _, d := range []struct {
		flag string
		v    monitoringv1.Duration
	}{
		{"prometheus.ready_timeout", t.ReadyTimeout},
		{"prometheus.get_config_interval", t.GetConfigInterval},
		{"prometheus.get_config_timeout", t.GetConfigTimeout},
	} {
		if d.v != "" {
			args = append(args, "--"+d.flag+"="+string(d.v))
		}
	}
	// The sidecar logs like Prometheus unless told otherwise, as with the existing operator.
	args = append(args, thanos.LogArgs(cmp.Or(t.LogLevel, p.Spec.LogLevel), cmp.Or(t.LogFormat, p.Spec.LogFormat))...)
	return args, env
}

// thanosHTTPClientConfig is the sidecar's client configuration for a Prometheus that
// serves HTTPS (Thanos's --prometheus.http-client, inline).
const thanosHTTPClientConfig = `{"tls_config": {"insecure_skip_verify": true}}`

// thanosVersion is the sidecar's Thanos version; validateThanos has refused one that does
// not parse.
func thanosVersion(t *monitoringv1.ThanosSpec) thanos.Version {
	v, _ := thanos.ParseVersion("spec.thanos.version", workload.Value(t.Version))
	return v
}

// thanosSidecar is the thanos-sidecar container; none without spec.thanos.
func thanosSidecar(p *monitoringv1.Prometheus) []corev1.Container {
	t := p.Spec.Thanos
	if t == nil {
		return nil
	}
	image, _ := thanosImage(t).Reference() // Validate has refused the errors
	args, env := thanosSidecarArgs(p)
	mounts := append([]corev1.VolumeMount{{Name: dataVolumeName(p), MountPath: storageDir, SubPath: dataSubPath(p)}}, t.VolumeMounts...)
	return []corev1.Container{{
		Name:            containerThanosSidecar,
		Image:           image,
		ImagePullPolicy: p.Spec.ImagePullPolicy,
		Args:            workload.Args(args, t.AdditionalArgs),
		Env:             env,
		Ports: []corev1.ContainerPort{
			{Name: thanosHTTPPortName, ContainerPort: thanos.WebPort, Protocol: corev1.ProtocolTCP},
			{Name: thanos.GRPCPortName, ContainerPort: thanos.GRPCPort, Protocol: corev1.ProtocolTCP},
		},
		Resources:                *t.Resources.DeepCopy(),
		VolumeMounts:             mounts,
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		SecurityContext:          workload.ContainerSecurityContext(),
	}}
}

// thanosServicePorts is the gRPC port on the governing Service, through which Thanos
// Query finds the sidecars.
func thanosServicePorts(p *monitoringv1.Prometheus) []corev1.ServicePort {
	if p.Spec.Thanos == nil {
		return nil
	}
	return []corev1.ServicePort{{Name: thanos.GRPCPortName, Port: thanos.GRPCPort, TargetPort: intstr.FromString(thanos.GRPCPortName), Protocol: corev1.ProtocolTCP}}
}

// validateThanos checks spec.thanos: the sub-fields Lookout cannot honour are refused by
// name.
func validateThanos(p *monitoringv1.Prometheus) *SpecError {
	t := p.Spec.Thanos
	if t == nil {
		return nil
	}
	if err := thanosImage(t).Check(); err != nil {
		err.Field = "spec.thanos." + err.Field[len("spec."):]
		err.Message = "spec.thanos." + err.Message[len("spec."):]
		return err
	}
	if _, err := thanos.GRPCServerTLSArgs("spec.thanos.grpcServerTlsConfig", t.GRPCServerTLSConfig, thanosVersion(t)); err != nil {
		return err
	}
	if err := thanosVersion(t).Check(
		thanos.Gate{Field: "spec.thanos.getConfigInterval", Set: t.GetConfigInterval != "", Flag: "prometheus.get_config_interval", Major: 0, Minor: 29},
		thanos.Gate{Field: "spec.thanos.getConfigTimeout", Set: t.GetConfigTimeout != "", Flag: "prometheus.get_config_timeout", Major: 0, Minor: 29},
		// The sidecar reaches an HTTPS Prometheus only with a client configuration.
		thanos.Gate{Field: "spec.web.tlsConfig", Set: webTLS(p) != nil, Flag: "prometheus.http-client", Major: 0, Minor: 24},
	); err != nil {
		return err
	}
	for _, c := range thanosFileConfigs(t) {
		if err := c.Check(); err != nil {
			return err
		}
	}
	if err := workload.CheckResources("spec.thanos.resources", t.Resources); err != nil {
		return err
	}
	if err := thanos.CheckLogFlags("spec.thanos", t.LogLevel, t.LogFormat); err != nil {
		return err
	}
	if t.MinTime != "" {
		if _, err := time.Parse(time.RFC3339, t.MinTime); err != nil {
			if _, err := model.ParseDuration(trimSign(t.MinTime)); err != nil {
				return invalid("spec.thanos.minTime", "%q is neither an RFC3339 time nor a duration such as -1d", t.MinTime)
			}
		}
	}
	for field, d := range map[string]monitoringv1.Duration{
		"spec.thanos.blockSize": t.BlockDuration, "spec.thanos.readyTimeout": t.ReadyTimeout,
		"spec.thanos.getConfigInterval": t.GetConfigInterval, "spec.thanos.getConfigTimeout": t.GetConfigTimeout,
	} {
		if d != "" {
			if _, err := model.ParseDuration(string(d)); err != nil {
				return invalid(field, "%q is not a duration, e.g. %q", d, "2h")
			}
		}
	}
	args, _ := thanosSidecarArgs(p)
	return thanos.CheckAdditionalArgs("spec.thanos", args, t.AdditionalArgs)
}

func trimSign(s string) string {
	if len(s) > 0 && (s[0] == '-' || s[0] == '+') {
		return s[1:]
	}
	return s
}
