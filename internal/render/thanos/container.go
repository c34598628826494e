package thanos

import (
	"crypto/tls"
	"fmt"
	"slices"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/lookout-operator/lookout/internal/render/workload"
)

// ImageSpec is the image of a Thanos container: image, else the default repository tagged
// with version (or the default version).
func ImageSpec(image *string, version string) workload.ImageSpec {
	return workload.ImageSpec{Image: image, Version: version, DefaultBase: DefaultBaseImage, DefaultVersion: DefaultVersion}
}

// FileConfig is one Thanos setting whose value is a whole file (object storage, query
// endpoints, tracing...): Thanos takes it either inline (--<flag>) or as a path
// (--<flag>-file). From a Secret key it is passed inline through an environment variable,
// so the kubelet reads the Secret and the configuration never lands in the pod spec.
type FileConfig struct {
	Field  string // the spec field naming the Secret key, for messages
	Flag   string // the Thanos flag, without dashes
	Env    string // the environment variable carrying a Secret's value
	Secret *corev1.SecretKeySelector
	File   string // a path in the container; used when Secret is nil
}

// Set reports whether the setting has a value.
func (c FileConfig) Set() bool { return c.Secret != nil || c.File != "" }

// Apply appends the flag and, for a Secret, its environment variable.
func (c FileConfig) Apply(args []string, env []corev1.EnvVar) ([]string, []corev1.EnvVar) {
	switch {
	case c.Secret != nil:
		args = append(args, "--"+c.Flag+"=$("+c.Env+")")
		env = append(env, corev1.EnvVar{Name: c.Env, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: c.Secret.DeepCopy()}})
	case c.File != "":
		args = append(args, "--"+c.Flag+"-file="+c.File)
	}
	return args, env
}

// Check refuses a Secret reference without a name or key: the pod could not start.
func (c FileConfig) Check() *workload.SpecError {
	if c.Secret == nil {
		return nil
	}
	if c.Secret.Name == "" || c.Secret.Key == "" {
		return workload.Invalid(c.Field, "needs both name and key")
	}
	return nil
}

// tlsVersions maps the API's TLS versions to the values of --grpc-server-tls-min-version.
var tlsVersions = map[monitoringv1.TLSVersion]string{
	monitoringv1.TLSVersion10: "1.0", monitoringv1.TLSVersion11: "1.1",
	monitoringv1.TLSVersion12: "1.2", monitoringv1.TLSVersion13: "1.3",
}

// GRPCServerTLSArgs are the flags that serve the gRPC StoreAPI over TLS with the Thanos
// version v. Thanos reads the certificate, key and client CA from files, so the *File
// fields (paths in the container, e.g. from volumeMounts) are honoured; the Secret and
// ConfigMap references, which would need the material mounted into the pod, and the
// fields Thanos's server has no flag for are refused by name, as are those v's Thanos has
// no flag for yet.
func GRPCServerTLSArgs(field string, c *monitoringv1.GRPCServerTLSConfig, v Version) ([]string, *workload.SpecError) {
	if c == nil {
		return nil, nil
	}
	unsupported := func(sub, why string) *workload.SpecError {
		return workload.Unsupported(field+"."+sub, why)
	}
	const mounted = "the TLS material is not mounted from Secrets or ConfigMaps yet; mount it with volumes/volumeMounts and use the *File fields"
	switch {
	case c.CA.Secret != nil || c.CA.ConfigMap != nil:
		return nil, unsupported("ca", mounted)
	case c.Cert.Secret != nil || c.Cert.ConfigMap != nil:
		return nil, unsupported("cert", mounted)
	case c.KeySecret != nil:
		return nil, unsupported("keySecret", mounted)
	case c.ServerName != nil:
		return nil, unsupported("serverName", "a server has no server name to verify")
	case c.InsecureSkipVerify != nil:
		return nil, unsupported("insecureSkipVerify", "a server verifies no server certificate")
	case c.MaxVersion != nil:
		return nil, unsupported("maxVersion", "Thanos's gRPC server has no maximum TLS version flag")
	}
	if err := v.Check(
		Gate{Field: field + ".minVersion", Set: c.MinVersion != nil, Flag: "grpc-server-tls-min-version", Major: 0, Minor: 37},
		Gate{Field: field + ".cipherSuites", Set: len(c.CipherSuites) > 0, Flag: "grpc-server-tls-ciphers", Major: 0, Minor: 42},
		Gate{Field: field + ".curves", Set: len(c.Curves) > 0, Flag: "grpc-server-tls-curves", Major: 0, Minor: 42},
	); err != nil {
		return nil, err
	}
	if (c.CertFile == "") != (c.KeyFile == "") {
		return nil, workload.Invalid(field, "certFile and keyFile go together: Thanos serves TLS with both or neither")
	}
	var args []string
	if c.CertFile != "" {
		args = append(args, "--grpc-server-tls-cert="+c.CertFile, "--grpc-server-tls-key="+c.KeyFile)
	}
	serverOnly := func(sub string) *workload.SpecError {
		return workload.Invalid(field+"."+sub, "applies to a TLS server: set certFile and keyFile too")
	}
	if c.CAFile != "" {
		if c.CertFile == "" {
			return nil, workload.Invalid(field+".caFile", "verifies clients of a TLS server: set certFile and keyFile too")
		}
		args = append(args, "--grpc-server-tls-client-ca="+c.CAFile)
	}
	if c.MinVersion != nil {
		v, ok := tlsVersions[*c.MinVersion]
		if !ok {
			return nil, workload.Invalid(field+".minVersion", "%q is not one of TLS10, TLS11, TLS12, TLS13", *c.MinVersion)
		}
		if c.CertFile == "" {
			return nil, serverOnly("minVersion")
		}
		args = append(args, "--grpc-server-tls-min-version="+v)
	}
	for _, l := range []struct {
		sub, flag string
		values    []string
		known     func(string) bool
	}{
		{"cipherSuites", "grpc-server-tls-ciphers", c.CipherSuites, knownCipherSuite},
		{"curves", "grpc-server-tls-curves", c.Curves, knownCurve},
	} {
		if len(l.values) == 0 {
			continue
		}
		if c.CertFile == "" {
			return nil, serverOnly(l.sub)
		}
		for i, name := range l.values {
			if !l.known(name) {
				return nil, workload.Invalid(fmt.Sprintf("%s.%s[%d]", field, l.sub, i), "%q is not a name Go's TLS stack (and so Thanos) knows", name)
			}
		}
		// Thanos takes one flag per value.
		for _, name := range l.values {
			args = append(args, "--"+l.flag+"="+name)
		}
	}
	return args, nil
}

// knownCipherSuite: Thanos accepts the names of Go's secure cipher suites.
func knownCipherSuite(name string) bool {
	return slices.ContainsFunc(tls.CipherSuites(), func(c *tls.CipherSuite) bool { return c.Name == name })
}

// knownCurve: Thanos accepts these names of Go's curves (its --grpc-server-tls-curves).
func knownCurve(name string) bool {
	return slices.Contains([]string{"CurveP256", "CurveP384", "CurveP521", "X25519", "X25519MLKEM768", "SecP256r1MLKEM768", "SecP384r1MLKEM1024"}, name)
}

// LogArgs are Thanos's logging flags.
func LogArgs(level, format string) []string {
	var args []string
	if level != "" {
		args = append(args, "--log.level="+level)
	}
	if format != "" {
		args = append(args, "--log.format="+format)
	}
	return args
}

// CheckLogFlags checks a Thanos log level and format under field (e.g. "spec.thanos").
func CheckLogFlags(field, level, format string) *workload.SpecError {
	return underField(workload.CheckLogFlags(level, format), field)
}

// underField moves an error on a top-level spec field under field.
func underField(err *workload.SpecError, field string) *workload.SpecError {
	if err != nil && field != "spec" {
		err.Message = strings.Replace(err.Message, "spec.", field+".", 1)
		err.Field = strings.Replace(err.Field, "spec.", field+".", 1)
	}
	return err
}

// CheckAdditionalArgs refuses malformed additionalArgs under field and flags Lookout sets.
// Thanos takes a file-valued setting inline (--X) or as a path (--X-file) and exits when
// given both, so either form Lookout sets rules out the other too.
func CheckAdditionalArgs(field string, generated []string, additional []monitoringv1.Argument) *workload.SpecError {
	all := slices.Clone(generated)
	for _, a := range generated {
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if base, ok := strings.CutSuffix(name, "-file"); ok {
			all = append(all, "--"+base)
		} else {
			all = append(all, "--"+name+"-file")
		}
	}
	return underField(workload.CheckAdditionalArgs(all, additional, "query.timeout", "Thanos"), field)
}
