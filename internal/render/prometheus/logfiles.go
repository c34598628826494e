package prometheus

import (
	"path"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
)

// The query log and the scrape failure log: a bare file name is written to an emptyDir at
// logDir, as with the existing operator, because the container's root filesystem is
// read-only.
const (
	logDir      = "/var/log/prometheus"
	volLogFiles = "log-file" // the existing operator's name: container patches mount it by name
)

// LogFilePath is where Prometheus writes the log file the spec names: a bare name goes to
// logDir, a path is kept.
func LogFilePath(name string) string {
	if !strings.Contains(name, "/") {
		return path.Join(logDir, name)
	}
	return name
}

// logFiles are the log files the spec sets, by field.
func logFiles(p *monitoringv1.Prometheus) [][2]string {
	var out [][2]string
	if f := p.Spec.QueryLogFile; f != "" {
		out = append(out, [2]string{"spec.queryLogFile", f})
	}
	if f := p.Spec.ScrapeFailureLogFile; f != nil && *f != "" {
		out = append(out, [2]string{"spec.scrapeFailureLogFile", *f})
	}
	return out
}

// needsLogVolume: some log file is a bare name, written to the emptyDir.
func needsLogVolume(p *monitoringv1.Prometheus) bool {
	for _, f := range logFiles(p) {
		if !strings.Contains(f[1], "/") {
			return true
		}
	}
	return false
}

// validateLogFiles refuses a log file Prometheus could not open: a path outside /dev and
// outside every writable volume mounted into the prometheus container — the data volume
// at /prometheus, spec.volumeMounts, the mounts a spec.containers patch of the prometheus
// container adds — is on the read-only root filesystem, and Prometheus would refuse the
// config that names it.
func validateLogFiles(p *monitoringv1.Prometheus) *SpecError {
	for _, f := range logFiles(p) {
		field, name := f[0], f[1]
		if !strings.Contains(name, "/") || strings.HasPrefix(name, "/dev/") {
			continue
		}
		if !path.IsAbs(name) || path.Clean(name) != name || strings.HasSuffix(name, "/") {
			return invalid(field, "%q must be a bare file name (written to %s) or an absolute, clean file path", name, logDir)
		}
		if !writableMount(p, path.Dir(name)) {
			return invalid(field, "%q is on the container's read-only root filesystem: use a bare file name (written to an emptyDir at %s), /dev/stdout, or mount a writable volume at %s with spec.volumes and spec.volumeMounts",
				name, logDir, path.Dir(name))
		}
	}
	return nil
}

// writableMount says whether dir is inside a mount of the prometheus container that is
// not read-only: the data volume, spec.volumeMounts, or a spec.containers patch's.
func writableMount(p *monitoringv1.Prometheus, dir string) bool {
	mounts := append([]corev1.VolumeMount{{MountPath: storageDir}}, p.Spec.VolumeMounts...)
	for _, c := range p.Spec.Containers {
		if c.Name == containerPrometheus {
			mounts = append(mounts, c.VolumeMounts...)
		}
	}
	for _, m := range mounts {
		mp := path.Clean(m.MountPath)
		if !m.ReadOnly && (dir == mp || strings.HasPrefix(dir, mp+"/")) {
			return true
		}
	}
	return false
}

func logVolume() corev1.Volume {
	return corev1.Volume{Name: volLogFiles, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
}

func logMount() corev1.VolumeMount {
	return corev1.VolumeMount{Name: volLogFiles, MountPath: logDir}
}
