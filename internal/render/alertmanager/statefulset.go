package alertmanager

import (
	"path"
	"strconv"
	"strings"

	"github.com/alecthomas/units"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/lookout-operator/lookout/internal/render/workload"
)

// Paths inside the pods, the existing operator's.
const (
	configDir         = "/etc/alertmanager/config"
	configOutDir      = "/etc/alertmanager/config_out"
	configEnvsubstOut = configOutDir + "/alertmanager.env.yaml"
	webConfigDir      = "/etc/alertmanager/web_config"
	webTLSDir         = "/etc/alertmanager/web_tls"
	secretsDir        = "/etc/alertmanager/secrets"
	configMapsDir     = "/etc/alertmanager/configmaps"
	storageDir        = "/alertmanager"

	volConfig    = "config-volume"
	volConfigOut = "config-out"
	volWebConfig = "web-config"
	volWebTLS    = "web-tls"

	containerAlertmanager = "alertmanager"

	defaultTerminationGracePeriod = 120
)

func statefulSet(am *monitoringv1.Alertmanager, opts Options) (*appsv1.StatefulSet, error) {
	spec, err := podSpec(am, opts)
	if err != nil {
		return nil, err
	}
	sts := podFields(am).StatefulSet(ownedMeta(am, StatefulSetName(am.Name)), Replicas(am), SelectorLabels(am.Name),
		map[string]string{LabelAlertmanager: am.Name, labelVersion: versionLabel(am)}, GoverningServiceName(am), containerAlertmanager, dataVolumeName(am), spec)
	sts.Spec.PersistentVolumeClaimRetentionPolicy = am.Spec.PersistentVolumeClaimRetentionPolicy
	return sts, nil
}

// labelVersion on the pods is the Alertmanager release they run, as the existing
// operator labels them.
const labelVersion = "app.kubernetes.io/version"

func versionLabel(am *monitoringv1.Alertmanager) string {
	return strings.TrimPrefix(version(am).Tag(), "v")
}

func dataVolumeName(am *monitoringv1.Alertmanager) string {
	return workload.DataVolumeName(am.Spec.Storage, VolumeClaimTemplateName(am.Name))
}

// ServiceAccountName is the account the pods run as: spec.serviceAccountName, else the
// namespace's default one (as with the existing operator).
func ServiceAccountName(am *monitoringv1.Alertmanager) string {
	if am.Spec.ServiceAccountName != "" {
		return am.Spec.ServiceAccountName
	}
	return "default"
}

func podSpec(am *monitoringv1.Alertmanager, opts Options) (corev1.PodSpec, error) {
	s := &am.Spec
	spec, err := podFields(am).PodSpec(
		[]corev1.Container{alertmanagerContainer(am), reloader(am, opts).Container(false)},
		[]corev1.Container{reloader(am, opts).Container(true)},
		volumes(am), ServiceAccountName(am), defaultTerminationGracePeriod)
	if err != nil {
		return corev1.PodSpec{}, err
	}
	// The reloader reads the generated config through the API with the pod's token; a
	// user who turns the token off gets a reloader that reads the mounted Secret.
	spec.AutomountServiceAccountToken = workload.Ptr(automountToken(am))
	workload.HostNetwork(&spec, s.HostNetwork)
	return spec, nil
}

func volumes(am *monitoringv1.Alertmanager) []corev1.Volume {
	vols := workload.ConfigVolumes(volConfig, ConfigSecretName(am.Name), WebConfigSecretName(am.Name), dataVolumeName(am), am.Spec.Storage)
	vols = append(vols, workload.UserVolumes(am.Spec.Secrets, am.Spec.ConfigMaps)...)
	vols = append(vols, clusterTLSVolumes(am)...)
	if t := webTLS(am); t != nil {
		if v := workload.WebTLSVolume(volWebTLS, t); v != nil {
			vols = append(vols, *v)
		}
	}
	return append(vols, am.Spec.Volumes...)
}

func routePrefix(am *monitoringv1.Alertmanager) string {
	if am.Spec.RoutePrefix == "" {
		return "/"
	}
	return am.Spec.RoutePrefix
}

func alertmanagerContainer(am *monitoringv1.Alertmanager) corev1.Container {
	image, _ := imageSpec(am).Reference() // Validate has refused the errors
	mounts := []corev1.VolumeMount{
		{Name: volConfig, MountPath: configDir, ReadOnly: true},
		{Name: volConfigOut, MountPath: configOutDir, ReadOnly: true},
		{Name: dataVolumeName(am), MountPath: storageDir, SubPath: dataSubPath(am)},
		{Name: volWebConfig, MountPath: webConfigDir, ReadOnly: true},
	}
	mounts = append(mounts, workload.UserMounts(am.Spec.Secrets, am.Spec.ConfigMaps, secretsDir, configMapsDir)...)
	if t := webTLS(am); t != nil && workload.WebTLSVolume(volWebTLS, t) != nil {
		mounts = append(mounts, corev1.VolumeMount{Name: volWebTLS, MountPath: webTLSDir, ReadOnly: true})
	}
	mounts = append(mounts, clusterTLSMounts(am)...)
	mounts = append(mounts, am.Spec.VolumeMounts...)
	// The mesh ports are declared whether or not the replicas gossip, as the existing
	// operator does (the governing Service names them).
	ports := []corev1.ContainerPort{
		{Name: PortName(am), ContainerPort: webPort, Protocol: corev1.ProtocolTCP},
		{Name: "mesh-tcp", ContainerPort: meshPort, Protocol: corev1.ProtocolTCP},
		{Name: "mesh-udp", ContainerPort: meshPort, Protocol: corev1.ProtocolUDP},
	}
	// The existing operator's probes: a replica is checked for readiness often from
	// its start, and given ten failures either way.
	probe := func(endpoint string, initialDelay, period int32) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
				Path: path.Join(routePrefix(am), endpoint), Port: intstr.FromString(PortName(am)), Scheme: webScheme(am),
			}},
			InitialDelaySeconds: initialDelay, PeriodSeconds: period, TimeoutSeconds: 3, FailureThreshold: 10,
		}
	}
	c := corev1.Container{
		Name:                     containerAlertmanager,
		Image:                    image,
		ImagePullPolicy:          am.Spec.ImagePullPolicy,
		Args:                     workload.Args(generatedArgs(am), am.Spec.AdditionalArgs),
		Env:                      env(am),
		Ports:                    ports,
		Resources:                resources(am),
		VolumeMounts:             mounts,
		ReadinessProbe:           probe("/-/ready", 3, 5),
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		SecurityContext:          workload.ContainerSecurityContext(),
	}
	if !am.Spec.ListenLocal {
		// Listening on localhost only, the kubelet cannot probe the pod.
		c.LivenessProbe = probe("/-/healthy", 0, 10)
	} else {
		c.ReadinessProbe = nil
	}
	return c
}

// env is what the flags read: the pod's IP (--cluster.listen-address) and, on releases
// that name their peers, its name (--cluster.peer-name).
func env(am *monitoringv1.Alertmanager) []corev1.EnvVar {
	e := []corev1.EnvVar{{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{
		FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "status.podIP"}}}}
	if atLeast(version(am), sinceClusterPeerName) {
		e = append(e, corev1.EnvVar{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{
			FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}})
	}
	return e
}

// defaultMemoryRequest is requested when spec.resources sets no memory request, as the
// existing operator does: the pods are not BestEffort, evicted first. With a memory
// limit and no request the apiserver requests the limit (a default above a lower limit
// would be refused).
var defaultMemoryRequest = resource.MustParse("200Mi")

func resources(am *monitoringv1.Alertmanager) corev1.ResourceRequirements {
	r := *am.Spec.Resources.DeepCopy()
	_, limited := r.Limits[corev1.ResourceMemory]
	if _, ok := r.Requests[corev1.ResourceMemory]; !ok && !limited {
		if r.Requests == nil {
			r.Requests = corev1.ResourceList{}
		}
		r.Requests[corev1.ResourceMemory] = defaultMemoryRequest
	}
	return r
}

// dataSubPath keeps the existing operator's layout: with spec.storage set, the data
// lives in the alertmanager-db directory of the volume.
func dataSubPath(am *monitoringv1.Alertmanager) string {
	if am.Spec.Storage == nil || am.Spec.Storage.DisableMountSubPath {
		return ""
	}
	return "alertmanager-db"
}

// clustered: replicas gossip with each other when there is more than one, or when the
// user forces it (forceEnableClusterMode, e.g. to add peers later). A single replica
// with additionalPeers stays alone, as with the existing operator.
func clustered(am *monitoringv1.Alertmanager) bool {
	return Replicas(am) > 1 || am.Spec.ForceEnableClusterMode
}

// The first Alertmanager release that knows each flag Lookout may generate (from
// Alertmanager's changelog; the existing operator gates the same flags at the same
// releases). A flag the running release does not know would stop it at start.
var (
	sinceLogFormat       = workload.Version{Minor: 16}
	sinceWebFlags        = workload.Version{Minor: 17} // --web.get-concurrency, --web.timeout
	sinceWebConfigFile   = workload.Version{Minor: 22}
	sinceClusterLabel    = workload.Version{Minor: 26}
	sinceEnableFeature   = workload.Version{Minor: 27}
	sinceSilenceLimits   = workload.Version{Minor: 28}
	sinceClusterPeerName = workload.Version{Minor: 30} // --cluster.peer-name and POD_NAME
	sinceDispatchDelay   = workload.Version{Minor: 30}
)

func atLeast(v, since workload.Version) bool { return v.AtLeast(since.Major, since.Minor) }

// version is the Alertmanager release the pods run; Validate has refused a bad one.
func version(am *monitoringv1.Alertmanager) workload.Version {
	v, _ := ParsedVersion(am)
	return v
}

// generatedArgs are the flags Lookout derives from the spec, in a fixed order, each
// only when the Alertmanager's release knows it.
func generatedArgs(am *monitoringv1.Alertmanager) []string {
	s := &am.Spec
	v := version(am)
	retention := string(s.Retention)
	if retention == "" {
		retention = DefaultRetention
	}
	listen := ":" + strconv.Itoa(webPort)
	if s.ListenLocal {
		listen = "127.0.0.1" + listen
	}
	args := []string{
		"--config.file=" + configEnvsubstOut,
		"--storage.path=" + storageDir,
		"--data.retention=" + retention,
		"--web.listen-address=" + listen,
		"--web.route-prefix=" + routePrefix(am),
	}
	if atLeast(v, sinceWebConfigFile) {
		args = append(args, "--web.config.file="+webConfigDir+"/"+WebConfigSecretKey)
	}
	if s.ExternalURL != "" {
		args = append(args, "--web.external-url="+s.ExternalURL)
	}
	if s.ClusterTLS != nil {
		args = append(args, "--cluster.tls-config="+clusterTLSConfigDir+"/"+ClusterTLSConfigKey)
	}
	if !clustered(am) {
		// An empty listen address turns gossip off: a single replica has nobody to talk to.
		args = append(args, "--cluster.listen-address=")
	} else {
		args = append(args, "--cluster.listen-address=[$(POD_IP)]:"+strconv.Itoa(meshPort))
		for i := range Replicas(am) {
			args = append(args, "--cluster.peer="+PeerAddress(am, i))
		}
		for _, p := range s.AdditionalPeers {
			args = append(args, "--cluster.peer="+p)
		}
		if atLeast(v, sinceClusterLabel) {
			label := am.Namespace + "/" + am.Name
			if s.ClusterLabel != nil {
				label = *s.ClusterLabel
			}
			args = append(args, "--cluster.label="+label)
		}
		if atLeast(v, sinceClusterPeerName) {
			peerName := "$(POD_NAME)"
			if s.ClusterPeerName != nil && *s.ClusterPeerName != "" {
				peerName = *s.ClusterPeerName
			}
			args = append(args, "--cluster.peer-name="+peerName)
		}
		args = append(args, "--cluster.reconnect-timeout=5m")
		if s.ClusterAdvertiseAddress != "" {
			args = append(args, "--cluster.advertise-address="+s.ClusterAdvertiseAddress)
		}
		if s.ClusterGossipInterval != "" {
			args = append(args, "--cluster.gossip-interval="+string(s.ClusterGossipInterval))
		}
		if s.ClusterPushpullInterval != "" {
			args = append(args, "--cluster.pushpull-interval="+string(s.ClusterPushpullInterval))
		}
		if s.ClusterPeerTimeout != "" {
			args = append(args, "--cluster.peer-timeout="+string(s.ClusterPeerTimeout))
		}
	}
	// info and logfmt are Alertmanager's defaults: left out, as the existing operator does.
	if s.LogLevel != "" && s.LogLevel != "info" {
		args = append(args, "--log.level="+s.LogLevel)
	}
	if s.LogFormat != "" && s.LogFormat != "logfmt" && atLeast(v, sinceLogFormat) {
		args = append(args, "--log.format="+s.LogFormat)
	}
	if w := s.Web; w != nil && atLeast(v, sinceWebFlags) {
		if w.GetConcurrency != nil {
			args = append(args, "--web.get-concurrency="+strconv.FormatUint(uint64(*w.GetConcurrency), 10))
		}
		if w.Timeout != nil {
			args = append(args, "--web.timeout="+strconv.FormatUint(uint64(*w.Timeout), 10)+"s")
		}
	}
	if l := s.Limits; l != nil && atLeast(v, sinceSilenceLimits) {
		if l.MaxSilences != nil {
			args = append(args, "--silences.max-silences="+strconv.Itoa(int(*l.MaxSilences)))
		}
		if l.MaxPerSilenceBytes != nil {
			n, _ := units.ParseBase2Bytes(string(*l.MaxPerSilenceBytes)) // Validate has refused the errors
			args = append(args, "--silences.max-silence-size-bytes="+strconv.FormatInt(int64(n), 10))
		}
	}
	if len(s.EnableFeatures) > 0 && atLeast(v, sinceEnableFeature) {
		args = append(args, "--enable-feature="+joinComma(workload.Uniq(s.EnableFeatures)))
	}
	// A replica that has just become ready waits before it notifies, so that gossip
	// has brought it the others' notification log (no duplicate after a rollout).
	if m := s.MinReadySeconds; m != nil && *m > 0 && atLeast(v, sinceDispatchDelay) && !hasArg(s.AdditionalArgs, "dispatch.start-delay") {
		args = append(args, "--dispatch.start-delay="+strconv.Itoa(int(*m))+"s")
	}
	return args
}

func hasArg(args []monitoringv1.Argument, name string) bool {
	for _, a := range args {
		if a.Name == name {
			return true
		}
	}
	return false
}

func reloader(am *monitoringv1.Alertmanager, opts Options) workload.Reloader {
	return workload.Reloader{
		Image:        opts.ReloaderImage,
		PullPolicy:   am.Spec.ImagePullPolicy,
		ConfigFile:   configDir + "/" + ConfigSecretKey,
		OutputFile:   configEnvsubstOut,
		ReloadURL:    strings.ToLower(string(webScheme(am))) + "://127.0.0.1:" + strconv.Itoa(webPort) + path.Join(routePrefix(am), "/-/reload"),
		ConfigSecret: configSecretRef(am),
		// With web TLS the loopback reload request is not verified: the certificate names
		// the Service, not 127.0.0.1, and the request never leaves the pod.
		Args: reloaderTLSArgs(am),
		// Template files arrive through the kubelet's sync of the Secret volume, and the
		// config may read files of spec.secrets and spec.configMaps: reload when any of
		// them changes too.
		SidecarArgs:   watchedDirs(am),
		SidecarMounts: workload.UserMounts(am.Spec.Secrets, am.Spec.ConfigMaps, secretsDir, configMapsDir),
		Mounts: []corev1.VolumeMount{
			{Name: volConfig, MountPath: configDir, ReadOnly: true},
			{Name: volConfigOut, MountPath: configOutDir},
		},
	}
}

// PortName is the name of the web port: spec.portName, else "web" (kube-prometheus-stack
// sets "http-web"). The container port, the probes and the governing Service use it.
func PortName(am *monitoringv1.Alertmanager) string {
	if am.Spec.PortName != "" {
		return am.Spec.PortName
	}
	return webPortName
}

// webTLS is spec.web.tlsConfig, nil when Alertmanager serves plain HTTP.
func webTLS(am *monitoringv1.Alertmanager) *monitoringv1.WebTLSConfig {
	if am.Spec.Web == nil {
		return nil
	}
	return am.Spec.Web.TLSConfig
}

// webScheme is how the kubelet and the reloader talk to the web server.
func webScheme(am *monitoringv1.Alertmanager) corev1.URIScheme {
	if webTLS(am) != nil {
		return corev1.URISchemeHTTPS
	}
	return corev1.URISchemeHTTP
}

func watchedDirs(am *monitoringv1.Alertmanager) []string {
	args := []string{"--watched-dir=" + configDir}
	for _, m := range workload.UserMounts(am.Spec.Secrets, am.Spec.ConfigMaps, secretsDir, configMapsDir) {
		args = append(args, "--watched-dir="+m.MountPath)
	}
	return args
}

func reloaderTLSArgs(am *monitoringv1.Alertmanager) []string {
	if webTLS(am) != nil {
		return []string{"--reload-insecure-skip-verify"}
	}
	return nil
}

func automountToken(am *monitoringv1.Alertmanager) bool {
	return am.Spec.AutomountServiceAccountToken == nil || *am.Spec.AutomountServiceAccountToken
}

// configSecretRef is the Secret the reloader watches through the API; "" (read the
// mounted file) when the pods have no token.
func configSecretRef(am *monitoringv1.Alertmanager) string {
	if !automountToken(am) {
		return ""
	}
	return am.Namespace + "/" + ConfigSecretName(am.Name)
}

func joinComma(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += ","
		}
		out += x
	}
	return out
}

func itoa(i int) string { return strconv.Itoa(i) }
