package workload

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The config reloader (cmd/lookout-reloader), the same for every kind.
const (
	ReloaderContainerName     = "config-reloader"
	InitReloaderContainerName = "init-config-reloader"
	ReloaderCommand           = "/bin/lookout-reloader"
	ReloaderPortName          = "reloader-web"
	ReloaderPort              = 8080
)

// Reloader describes the config-reloader of one pod: it reads the generated config from
// ConfigSecret through the API (falling back to ConfigFile, where the Secret is mounted),
// writes it env-substituted to OutputFile and asks the server to reload at ReloadURL,
// or with SignalProcess sends SIGHUP to the process of that name.
type Reloader struct {
	Image        string
	PullPolicy   corev1.PullPolicy
	ConfigFile   string
	OutputFile   string
	ReloadURL    string
	ConfigSecret string // "<namespace>/<name>"
	// SignalProcess, when set, is the executable name of the server in the pod's shared
	// process namespace: the reloader signals it instead of requesting ReloadURL, and
	// confirms the reload from the server's MetricsURL.
	SignalProcess, MetricsURL string
	// Args follow the generated ones in both containers; SidecarArgs only in the sidecar
	// (directories to watch, which the init container has no use for).
	Args, SidecarArgs []string
	// Env follows POD_NAME and POD_NAMESPACE.
	Env []corev1.EnvVar
	// Mounts are in both containers; SidecarMounts only in the sidecar.
	Mounts, SidecarMounts []corev1.VolumeMount
}

// Container is the sidecar, or with init set the init container that writes the
// configuration once before the server starts.
func (r Reloader) Container(init bool) corev1.Container {
	args := []string{"--listen-address=:" + strconv.Itoa(ReloaderPort)}
	// Without a generated config (a ThanosRuler's pod) the reloader only watches
	// directories.
	if r.ConfigFile != "" {
		args = append(args, "--config-file="+r.ConfigFile, "--config-envsubst-file="+r.OutputFile)
	}
	if r.SignalProcess != "" {
		args = append(args, "--reload-strategy=signal", "--reload-signal-process="+r.SignalProcess, "--reload-metrics-url="+r.MetricsURL)
	} else {
		args = append(args, "--reload-url="+r.ReloadURL)
	}
	if r.ConfigSecret != "" {
		args = append(args, "--config-secret="+r.ConfigSecret)
	}
	args = append(args, r.Args...)
	c := corev1.Container{
		Name:            ReloaderContainerName,
		Image:           r.Image,
		ImagePullPolicy: r.PullPolicy,
		Command:         []string{ReloaderCommand},
		Args:            args,
		Env: append([]corev1.EnvVar{
			{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}},
			{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}},
		}, r.Env...),
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("10m"),
				corev1.ResourceMemory: resource.MustParse("32Mi"),
			},
			Limits: corev1.ResourceList{
				corev1.ResourceMemory: resource.MustParse("128Mi"),
			},
		},
		VolumeMounts:             append([]corev1.VolumeMount(nil), r.Mounts...),
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		SecurityContext:          ContainerSecurityContext(),
	}
	if init {
		c.Name = InitReloaderContainerName
		c.Args = append(c.Args, "--init-mode")
		return c
	}
	c.Args = append(c.Args, r.SidecarArgs...)
	c.VolumeMounts = append(c.VolumeMounts, r.SidecarMounts...)
	c.Ports = []corev1.ContainerPort{{Name: ReloaderPortName, ContainerPort: ReloaderPort, Protocol: corev1.ProtocolTCP}}
	return c
}
