package prometheus

import (
	"github.com/lookout-operator/lookout/internal/render/workload"

	"path"
	"strconv"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Paths inside the pods, as the existing operator lays them out (docs/compatibility.md).
const (
	configDir         = "/etc/prometheus/config"
	configOutDir      = "/etc/prometheus/config_out"
	configEnvsubstOut = configOutDir + "/prometheus.env.yaml"
	webConfigDir      = "/etc/prometheus/web_config"
	webTLSDir         = "/etc/prometheus/web_tls"
	secretsDir        = "/etc/prometheus/secrets"
	configMapsDir     = "/etc/prometheus/configmaps"

	volConfig    = "config"
	volConfigOut = "config-out"
	volWebConfig = "web-config"
	volWebTLS    = "web-tls"

	containerPrometheus = "prometheus"

	// Prometheus flushes the head block on shutdown; killing it early means a long WAL
	// replay at the next start.
	defaultTerminationGracePeriod = 600
	startupProbePeriod            = 15
	// defaultStartupDuration bounds the WAL replay before the kubelet restarts the pod.
	defaultStartupDuration = 15 * 60
)

// statefulSet builds the StatefulSet of one shard.
func statefulSet(p *monitoringv1.Prometheus, opts Options, shard int32) (*appsv1.StatefulSet, error) {
	pod, err := podSpec(p, opts, shard)
	if err != nil {
		return nil, err
	}
	name := FlavourOf(p).StatefulSetName(p.Name, shard)
	selector := FlavourOf(p).SelectorLabels(p.Name, shard)

	meta := workloadMeta(p, opts, name)
	// The StatefulSet tells which shard it runs and who manages it (Lookout); only the pod
	// selector keeps the existing operator's managed-by value.
	meta.Labels[labelShard] = strconv.Itoa(int(shard))

	sts := &appsv1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
		ObjectMeta: meta,
		Spec: appsv1.StatefulSetSpec{
			Replicas:        ptrTo(workload.ValueOr(p.Spec.Replicas, 1)),
			Selector:        &metav1.LabelSelector{MatchLabels: selector},
			ServiceName:     GoverningServiceName(p),
			MinReadySeconds: workload.Value(p.Spec.MinReadySeconds),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{
					// Kept as given; the StatefulSet names its pods <name>-<ordinal> whatever it says.
					Name:        podMetadataName(p),
					Labels:      podTemplateLabels(p, shard),
					Annotations: podTemplateAnnotations(p),
				},
				Spec: pod,
			},
			PersistentVolumeClaimRetentionPolicy: p.Spec.PersistentVolumeClaimRetentionPolicy,
		},
	}
	workload.ApplyStatefulSetPolicies(&sts.Spec, p.Spec.PodManagementPolicy, p.Spec.UpdateStrategy)
	if pvc := workload.VolumeClaimTemplate(p.Spec.Storage, dataVolumeName(p)); pvc != nil {
		sts.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{*pvc}
	}
	return sts, nil
}

// workloadMeta is the metadata of the StatefulSet (or DaemonSet): Lookout's labels, the
// owner's name and, as with the existing operator, the mode (server or agent, for
// dashboards that tell them apart).
func workloadMeta(p *monitoringv1.Prometheus, opts Options, name string) metav1.ObjectMeta {
	meta := ownedMeta(p, opts, name)
	meta.Labels[labelOpName] = p.Name
	if m := FlavourOf(p).Mode; m != "" {
		meta.Labels[LabelMode] = m
	}
	return meta
}

// podTemplateLabels: spec.podMetadata.labels, which never override the selector labels,
// Lookout's label and, as with the existing operator, the Prometheus version.
func podTemplateLabels(p *monitoringv1.Prometheus, shard int32) map[string]string {
	extra := map[string]string{FlavourOf(p).OwnerLabel: p.Name}
	if v, err := ParsedVersion(p); err == nil {
		extra[labelVersion] = strings.TrimPrefix(v.Tag(), "v")
	}
	return workload.PodLabels(p.Spec.PodMetadata, FlavourOf(p).SelectorLabels(p.Name, shard), extra)
}

func podMetadataName(p *monitoringv1.Prometheus) string {
	if p.Spec.PodMetadata == nil {
		return ""
	}
	return p.Spec.PodMetadata.Name
}

func podTemplateAnnotations(p *monitoringv1.Prometheus) map[string]string {
	return workload.PodAnnotations(p.Spec.PodMetadata, containerPrometheus)
}

// dataVolumeName is the name of the volume mounted at /prometheus: the PVC template's name
// when one is given, prometheus-<name>-db otherwise.
func dataVolumeName(p *monitoringv1.Prometheus) string {
	return workload.DataVolumeName(p.Spec.Storage, FlavourOf(p).VolumeClaimTemplateName(p.Name))
}

// podSpec is the pod of one shard; spec.containers and spec.initContainers patch the
// generated containers (workload.MergeContainers).
func podSpec(p *monitoringv1.Prometheus, opts Options, shard int32) (corev1.PodSpec, error) {
	s := &p.Spec
	containers, err := workload.MergeContainers("spec.containers",
		append([]corev1.Container{prometheusContainer(p), reloaderContainer(p, opts, shard, false)}, thanosSidecar(p)...), s.Containers)
	if err != nil {
		return corev1.PodSpec{}, err
	}
	initContainers, err := workload.MergeContainers("spec.initContainers",
		[]corev1.Container{reloaderContainer(p, opts, shard, true)}, s.InitContainers)
	if err != nil {
		return corev1.PodSpec{}, err
	}
	spec := corev1.PodSpec{
		InitContainers:     initContainers,
		Containers:         containers,
		Volumes:            volumes(p),
		ServiceAccountName: s.ServiceAccountName,
		// Without the token the reloader follows the mounted config files (the kubelet's
		// sync, up to a minute) instead of the API, and Kubernetes discovery needs
		// spec.apiserverConfig or a token the user mounts, as the API documents.
		AutomountServiceAccountToken: ptrTo(workload.ValueOr(s.AutomountServiceAccountToken, true)),
		// As given, nil included, as with the existing operator: a platform that assigns
		// user ids (OpenShift) refuses ids set here, and an fsGroup makes the kubelet
		// chown the whole data volume at every mount.
		SecurityContext:               p.Spec.SecurityContext.DeepCopy(),
		TerminationGracePeriodSeconds: ptrTo(workload.ValueOr(s.TerminationGracePeriodSeconds, defaultTerminationGracePeriod)),
		NodeSelector:                  s.NodeSelector,
		Tolerations:                   s.Tolerations,
		Affinity:                      s.Affinity,
		TopologySpreadConstraints:     topologySpreadConstraints(p, shard),
		PriorityClassName:             s.PriorityClassName,
		SchedulerName:                 s.SchedulerName,
		ImagePullSecrets:              s.ImagePullSecrets,
		EnableServiceLinks:            s.EnableServiceLinks,
		HostUsers:                     s.HostUsers,
	}
	if processSignal(p) {
		// The reloader finds Prometheus among the pod's processes to signal it.
		spec.ShareProcessNamespace = ptrTo(true)
	}
	spec.DNSPolicy, spec.DNSConfig = workload.DNS(s.DNSPolicy, s.DNSConfig)
	spec.HostAliases = workload.HostAliases(s.HostAliases)
	workload.HostNetwork(&spec, s.HostNetwork)
	return spec, nil
}

func topologySpreadConstraints(p *monitoringv1.Prometheus, shard int32) []corev1.TopologySpreadConstraint {
	var out []corev1.TopologySpreadConstraint
	for _, c := range p.Spec.TopologySpreadConstraints {
		tsc := corev1.TopologySpreadConstraint(*c.CoreV1TopologySpreadConstraint.DeepCopy())
		if a := c.AdditionalLabelSelectors; a != nil {
			add := FlavourOf(p).PodLabels(p.Name)
			if *a == monitoringv1.ShardAndResourceNameLabelSelector {
				add = FlavourOf(p).SelectorLabels(p.Name, shard)
			}
			if tsc.LabelSelector == nil {
				tsc.LabelSelector = &metav1.LabelSelector{}
			}
			tsc.LabelSelector.MatchLabels = workload.MergeLabels(tsc.LabelSelector.MatchLabels, add)
		}
		out = append(out, tsc)
	}
	return out
}

func volumes(p *monitoringv1.Prometheus) []corev1.Volume {
	vols := workload.ConfigVolumes(volConfig, FlavourOf(p).ConfigSecretName(p.Name), FlavourOf(p).WebConfigSecretName(p.Name), dataVolumeName(p), p.Spec.Storage)
	vols = append(vols, workload.UserVolumes(p.Spec.Secrets, p.Spec.ConfigMaps)...)
	vols = append(vols, ruleVolumes(p)...)
	vols = append(vols, configPieceVolumes(p)...)
	if needsLogVolume(p) {
		vols = append(vols, logVolume())
	}
	if t := webTLS(p); t != nil {
		if v := workload.WebTLSVolume(volWebTLS, t); v != nil {
			vols = append(vols, *v)
		}
	}
	return append(vols, p.Spec.Volumes...)
}

func prometheusContainer(p *monitoringv1.Prometheus) corev1.Container {
	image, _ := imageSpec(p).Reference() // Validate has refused the errors
	mounts := []corev1.VolumeMount{
		{Name: volConfigOut, MountPath: configOutDir, ReadOnly: true},
		{Name: dataVolumeName(p), MountPath: storageDir, SubPath: dataSubPath(p)},
		{Name: volWebConfig, MountPath: webConfigDir, ReadOnly: true},
	}
	mounts = append(mounts, workload.UserMounts(p.Spec.Secrets, p.Spec.ConfigMaps, secretsDir, configMapsDir)...)
	mounts = append(mounts, ruleMounts(p)...)
	if needsLogVolume(p) {
		mounts = append(mounts, logMount())
	}
	if t := webTLS(p); t != nil && workload.WebTLSVolume(volWebTLS, t) != nil {
		mounts = append(mounts, corev1.VolumeMount{Name: volWebTLS, MountPath: webTLSDir, ReadOnly: true})
	}
	mounts = append(mounts, p.Spec.VolumeMounts...)
	startupSeconds := workload.ValueOr(p.Spec.MaximumStartupDurationSeconds, defaultStartupDuration)
	c := corev1.Container{
		Name:            containerPrometheus,
		Image:           image,
		ImagePullPolicy: p.Spec.ImagePullPolicy,
		Args:            prometheusArgs(p),
		Ports:           webContainerPorts(p),
		Resources:       *p.Spec.Resources.DeepCopy(),
		VolumeMounts:    mounts,
		StartupProbe: &corev1.Probe{
			ProbeHandler:     httpProbe(p, "/-/ready"),
			PeriodSeconds:    startupProbePeriod,
			TimeoutSeconds:   3,
			FailureThreshold: (startupSeconds + startupProbePeriod - 1) / startupProbePeriod,
		},
		ReadinessProbe: &corev1.Probe{
			ProbeHandler:     httpProbe(p, "/-/ready"),
			PeriodSeconds:    5,
			TimeoutSeconds:   3,
			FailureThreshold: 3,
		},
		LivenessProbe: &corev1.Probe{
			ProbeHandler:     httpProbe(p, "/-/healthy"),
			PeriodSeconds:    5,
			TimeoutSeconds:   3,
			FailureThreshold: 6,
		},
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		SecurityContext:          workload.ContainerSecurityContext(),
	}
	return c
}

// webContainerPorts is the web port, none when Prometheus listens on loopback only (the
// kubelet and the Services could not reach it), as with the existing operator.
func webContainerPorts(p *monitoringv1.Prometheus) []corev1.ContainerPort {
	if p.Spec.ListenLocal {
		return nil
	}
	return []corev1.ContainerPort{{Name: WebPortName(p), ContainerPort: webPort, Protocol: corev1.ProtocolTCP}}
}

// dataSubPath keeps the existing operator's layout: with spec.storage set, the TSDB lives
// in the prometheus-db directory of the volume, and a migrated pod must find it there.
func dataSubPath(p *monitoringv1.Prometheus) string {
	if p.Spec.Storage == nil || p.Spec.Storage.DisableMountSubPath {
		return ""
	}
	return storageSubPath
}

func routePrefix(p *monitoringv1.Prometheus) string {
	if p.Spec.RoutePrefix == "" {
		return "/"
	}
	return p.Spec.RoutePrefix
}

// httpProbe probes endpoint over HTTP(S); with spec.listenLocal, where the kubelet cannot
// reach the web server, it runs promtool in the container against loopback instead (it
// needs no shell, so distroless images work), as the existing operator does from
// Prometheus v2.44 on; before, a shell runs curl or wget.
func httpProbe(p *monitoringv1.Prometheus, endpoint string) corev1.ProbeHandler {
	if p.Spec.ListenLocal {
		u := "http://localhost:" + strconv.Itoa(webPort)
		if v, _ := ParsedVersion(p); v.AtLeast(2, 44) {
			check := "healthy"
			if endpoint == "/-/ready" {
				check = "ready"
			}
			return corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"promtool", "check", check, "--url", u}}}
		}
		u += path.Join(routePrefix(p), endpoint)
		return corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"sh", "-c",
			`if [ -x "$(command -v curl)" ]; then exec curl --fail ` + u + `; elif [ -x "$(command -v wget)" ]; then exec wget -q -O /dev/null ` + u + `; else exit 1; fi`}}}
	}
	return corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
		Path:   path.Join(routePrefix(p), endpoint),
		Port:   intstr.FromString(WebPortName(p)),
		Scheme: webScheme(p),
	}}
}

// webTLS is spec.web.tlsConfig, nil when Prometheus serves plain HTTP.
func webTLS(p *monitoringv1.Prometheus) *monitoringv1.WebTLSConfig {
	if p.Spec.Web == nil {
		return nil
	}
	return p.Spec.Web.TLSConfig
}

// webScheme is how the kubelet and the reloader talk to the web server.
func webScheme(p *monitoringv1.Prometheus) corev1.URIScheme {
	if webTLS(p) != nil {
		return corev1.URISchemeHTTPS
	}
	return corev1.URISchemeHTTP
}

// prometheusArgs are the command-line flags of the prometheus container: the generated
// ones, then spec.additionalArgs.
func prometheusArgs(p *monitoringv1.Prometheus) []string {
	return workload.Args(generatedArgs(p), p.Spec.AdditionalArgs)
}

// generatedArgs are the flags Lookout derives from the spec; flags from optional fields
// follow the fixed ones in a fixed order.
func generatedArgs(p *monitoringv1.Prometheus) []string {
	s := &p.Spec
	args := append([]string{"--config.file=" + configEnvsubstOut}, storageArgs(p)...)
	if !processSignal(p) {
		args = append(args, "--web.enable-lifecycle")
	}
	args = append(args,
		"--web.config.file="+webConfigDir+"/"+WebConfigSecretKey,
		"--web.route-prefix="+routePrefix(p),
		"--web.listen-address="+listenHost(p)+":"+strconv.Itoa(webPort),
	)
	if s.ExternalURL != "" {
		args = append(args, "--web.external-url="+s.ExternalURL)
	}
	if w := s.Web; w != nil {
		if w.PageTitle != nil {
			args = append(args, "--web.page-title="+*w.PageTitle)
		}
		if w.MaxConnections != nil {
			args = append(args, "--web.max-connections="+strconv.Itoa(int(*w.MaxConnections)))
		}
	}
	if s.EnableAdminAPI {
		args = append(args, "--web.enable-admin-api")
	}
	if s.EnableRemoteWriteReceiver {
		args = append(args, "--web.enable-remote-write-receiver")
	}
	for _, m := range s.RemoteWriteReceiverMessageVersions {
		args = append(args, "--web.remote-write-receiver.accepted-protobuf-messages="+receiverMessages[m])
	}
	v, _ := ParsedVersion(p)
	// The OTLP receiver: asked for, or implied by spec.otlp when not said; a flag since
	// v3, a feature flag from v2.47 (none before), as with the existing operator.
	otlp := workload.ValueOr(s.EnableOTLPReceiver, s.OTLP != nil)
	if otlp && v.Major >= 3 {
		args = append(args, "--web.enable-otlp-receiver")
	}
	// Prometheus v2 ships the console templates; the existing operator points at them.
	if v.Major < 3 {
		args = append(args, "--web.console.templates=/etc/prometheus/consoles", "--web.console.libraries=/etc/prometheus/console_libraries")
	}
	if s.LogLevel != "" {
		args = append(args, "--log.level="+s.LogLevel)
	}
	if s.LogFormat != "" {
		args = append(args, "--log.format="+s.LogFormat)
	}
	features := make([]string, 0, len(s.EnableFeatures)+1)
	for _, f := range s.EnableFeatures {
		features = append(features, string(f))
	}
	if otlp && v.Major < 3 && v.AtLeast(2, 47) {
		features = append(features, otlpWriteReceiverFeature)
	}
	// Remote Write 2.0 takes the metadata it sends from the WAL; the API documents that
	// Prometheus is then configured to write it there. From v3.4 Prometheus does so
	// without the feature, and the existing operator stops adding it.
	if remoteWriteV2(p) && !v.AtLeast(3, 4) {
		features = append(features, metadataWALRecordsFeature)
	}
	// The API documents that Xor2 float chunks turn the feature on.
	if ts := s.TSDB; ts != nil && ts.ChunkEncoding != nil && ts.ChunkEncoding.Floats != nil && *ts.ChunkEncoding.Floats == monitoringv1.ChunkEncodingFloatsXor2 {
		features = append(features, xor2EncodingFeature)
	}
	if len(features) > 0 {
		args = append(args, "--enable-feature="+strings.Join(workload.Uniq(features), ","))
	}
	if s.WALCompression != nil {
		flag := "storage.tsdb.wal-compression"
		if FlavourOf(p).Agent {
			flag = "storage.agent.wal-compression"
		}
		if *s.WALCompression {
			args = append(args, "--"+flag)
		} else {
			args = append(args, "--no-"+flag)
		}
	}
	// Prometheus allows overlapping blocks from v2.39 on and dropped the flag in v3; before
	// that the field is the flag.
	if s.AllowOverlappingBlocks {
		if !v.AtLeast(2, 39) {
			args = append(args, "--storage.tsdb.allow-overlapping-blocks")
		}
	}
	// Equal minimum and maximum block durations with spec.disableCompaction or a Thanos
	// sidecar that uploads: head blocks are never merged.
	args = append(args, thanosPrometheusArgs(p)...)
	if q := s.Query; q != nil {
		if q.LookbackDelta != nil {
			args = append(args, "--query.lookback-delta="+*q.LookbackDelta)
		}
		if q.MaxConcurrency != nil {
			args = append(args, "--query.max-concurrency="+strconv.Itoa(int(*q.MaxConcurrency)))
		}
		// maxSamples 0 means "Prometheus's default", as with the existing operator; as a
		// flag it would refuse every query.
		if q.MaxSamples != nil && *q.MaxSamples > 0 {
			args = append(args, "--query.max-samples="+strconv.Itoa(int(*q.MaxSamples)))
		}
		if q.Timeout != nil {
			args = append(args, "--query.timeout="+string(*q.Timeout))
		}
	}
	// The rule engine's alert timing; Prometheus reads these only at start, so a change rolls
	// the pods (the API says so).
	for _, f := range rulesAlertFlags(p) {
		if f.value != "" {
			args = append(args, "--"+f.flag+"="+f.value)
		}
	}
	return args
}

// storageArgs are a server's TSDB flags, or an agent's: agent mode and its WAL in the
// data volume.
func storageArgs(p *monitoringv1.Prometheus) []string {
	if FlavourOf(p).Agent {
		return agentModeArgs(p)
	}
	s := &p.Spec
	args := []string{"--storage.tsdb.path=" + storageDir}
	// The API's default: 24h only when no retention of any kind is given.
	switch {
	case s.Retention != "":
		args = append(args, "--storage.tsdb.retention.time="+string(s.Retention))
	case s.RetentionSize == "":
		args = append(args, "--storage.tsdb.retention.time="+defaultRetention)
	}
	if s.RetentionSize != "" {
		args = append(args, "--storage.tsdb.retention.size="+string(s.RetentionSize))
	}
	return args
}

// rulesAlertFlag is one field of spec.rules.alert and the Prometheus flag it sets.
type rulesAlertFlag struct {
	field, flag, value string
}

func rulesAlertFlags(p *monitoringv1.Prometheus) []rulesAlertFlag {
	a := &p.Spec.Rules.Alert
	return []rulesAlertFlag{
		{"spec.rules.alert.forOutageTolerance", "rules.alert.for-outage-tolerance", a.ForOutageTolerance},
		{"spec.rules.alert.forGracePeriod", "rules.alert.for-grace-period", a.ForGracePeriod},
		{"spec.rules.alert.resendDelay", "rules.alert.resend-delay", a.ResendDelay},
	}
}

// reloaderContainer is the config-reloader sidecar, or with init set the init container
// that writes the configuration once before Prometheus starts. Rule files change through
// the kubelet's ConfigMap sync; the sidecar watches their directories and reloads.
func reloaderContainer(p *monitoringv1.Prometheus, opts Options, shard int32, init bool) corev1.Container {
	r := workload.Reloader{
		Image:        opts.ReloaderImage,
		PullPolicy:   p.Spec.ImagePullPolicy,
		ConfigFile:   configDir + "/" + ConfigSecretKey,
		OutputFile:   configEnvsubstOut,
		ReloadURL:    localURL(p, "/-/reload"),
		ConfigSecret: p.Namespace + "/" + FlavourOf(p).ConfigSecretName(p.Name),
		Args:         reloaderArgs(p),
		SidecarArgs:  ruleWatchArgs(p),
		Env:          reloaderEnv(opts, shard),
		Mounts: append([]corev1.VolumeMount{
			{Name: volConfig, MountPath: configDir, ReadOnly: true},
			{Name: volConfigOut, MountPath: configOutDir},
		}, configPieceMounts()...),
		SidecarMounts: ruleMounts(p),
	}
	if processSignal(p) {
		r.SignalProcess, r.MetricsURL = prometheusProcess, localURL(p, "/metrics")
	}
	return r.Container(init)
}

// prometheusProcess is the executable name of Prometheus in its image (/bin/prometheus).
const prometheusProcess = "prometheus"

// processSignal reports spec.reloadStrategy ProcessSignal: Prometheus runs without its
// lifecycle API, and the reloader reloads it with SIGHUP through the pod's shared
// process namespace.
func processSignal(p *monitoringv1.Prometheus) bool {
	return p.Spec.ReloadStrategy != nil && *p.Spec.ReloadStrategy == monitoringv1.ProcessSignalReloadStrategyType
}

// localURL is endpoint of Prometheus's web server as the other containers of its pod
// reach it, on loopback.
func localURL(p *monitoringv1.Prometheus, endpoint string) string {
	return strings.ToLower(string(webScheme(p))) + "://127.0.0.1:" + strconv.Itoa(webPort) + path.Join(routePrefix(p), endpoint)
}

// reloaderArgs: the config pieces, with web TLS no verification of the certificate on
// the loopback reload request, which names the Service, not 127.0.0.1, and never leaves the
// pod, and spec.logLevel.
func reloaderArgs(p *monitoringv1.Prometheus) []string {
	args := configPieceArgs(p)
	if webTLS(p) != nil {
		args = append(args, "--reload-insecure-skip-verify")
	}
	// The reloader logs at the Prometheus's level, as the existing operator's does.
	if p.Spec.LogLevel != "" {
		args = append(args, "--log-level="+p.Spec.LogLevel)
	}
	return args
}

// otlpWriteReceiverFeature is the OTLP receiver of Prometheus v2.47 to v2.55.
const otlpWriteReceiverFeature = "otlp-write-receiver"

// metadataWALRecordsFeature makes Prometheus write metric metadata to the WAL, where Remote
// Write 2.0 reads it.
const metadataWALRecordsFeature = "metadata-wal-records"

// receiverMessages are the protobuf messages Prometheus names the remote write versions by.
var receiverMessages = map[monitoringv1.RemoteWriteMessageVersion]string{
	monitoringv1.RemoteWriteMessageVersion1_0: "prometheus.WriteRequest",
	monitoringv1.RemoteWriteMessageVersion2_0: "io.prometheus.write.v2.Request",
}

// xor2EncodingFeature lets Prometheus write float chunks in the XOR2 encoding.
const xor2EncodingFeature = "xor2-encoding"

// listenHost is the web listener's host: all addresses, or loopback with spec.listenLocal.
func listenHost(p *monitoringv1.Prometheus) string {
	if p.Spec.ListenLocal {
		return "127.0.0.1"
	}
	return ""
}

// remoteWriteV2 says whether some spec.remoteWrite entry sends Remote Write 2.0 messages.
func remoteWriteV2(p *monitoringv1.Prometheus) bool {
	for i := range p.Spec.RemoteWrite {
		if v := p.Spec.RemoteWrite[i].MessageVersion; v != nil && *v == monitoringv1.RemoteWriteMessageVersion2_0 {
			return true
		}
	}
	return false
}
