package thanos

import (
	"errors"
	"path"
	"strconv"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/lookout-operator/lookout/internal/render/workload"
)

// Object is what Objects returns: a typed Kubernetes object.
type Object = workload.Object

// Options are the inputs of Objects besides the spec.
type Options struct {
	// RuleConfigMaps is the data of each rule ConfigMap, as the rules package packs it.
	RuleConfigMaps []map[string]string
	// ReloaderImage is the image of the config-reloader sidecar.
	ReloaderImage string
}

const (
	containerRuler                = "thanos-ruler"
	defaultTerminationGracePeriod = 120
)

// defaultMemoryRequest is the thanos-ruler container's memory request when spec.resources
// sets none, as with the existing operator.
var defaultMemoryRequest = resource.MustParse("200Mi")

// Objects renders every object of one ThanosRuler, in the order they are applied: the rule
// ConfigMaps, the governing Service (co-owned by every ThanosRuler of the namespace, see
// workload.Shared) and the StatefulSet. Every object has its TypeMeta set and an owner
// reference to tr.
func Objects(tr *monitoringv1.ThanosRuler, opts Options) ([]Object, error) {
	if err := Validate(tr); err != nil {
		return nil, err
	}
	if opts.ReloaderImage == "" {
		return nil, errors.New("render ThanosRuler " + tr.Namespace + "/" + tr.Name + ": no reloader image given")
	}
	if len(opts.RuleConfigMaps) > RuleConfigMapSlots {
		return nil, errors.New("render ThanosRuler " + tr.Namespace + "/" + tr.Name + ": more rule ConfigMaps than the pods mount")
	}
	sts, err := statefulSet(tr, opts)
	if err != nil {
		return nil, err
	}
	var out []Object
	for _, cm := range ruleFiles(tr).ConfigMaps(opts.RuleConfigMaps, func(name string) metav1.ObjectMeta {
		meta := ownedMeta(tr, name)
		meta.Labels[labelRuleConfigMapOwner] = tr.Name
		return meta
	}) {
		out = append(out, cm)
	}
	// A custom spec.serviceName names a Service the user provides: Lookout creates none.
	if tr.Spec.ServiceName == nil || *tr.Spec.ServiceName == "" {
		out = append(out, governingService(tr))
	}
	out = append(out, sts)
	// The builders share slices and maps with tr; copy so callers may change either.
	for i, obj := range out {
		out[i] = obj.DeepCopyObject().(Object)
	}
	return out, nil
}

// governingService is the headless Service that names the pods. Every ThanosRuler of the
// namespace shares it, each adding a non-controller owner reference under its own field
// manager; the garbage collector deletes it with the last owner.
func governingService(tr *monitoringv1.ThanosRuler) *corev1.Service {
	return &corev1.Service{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      GoverningServiceName(tr),
			Namespace: tr.Namespace,
			Labels: map[string]string{
				"operated-thanos-ruler": "true",
				labelManagedBy:          "lookout",
				workload.LabelShared:    "true",
			},
			OwnerReferences: []metav1.OwnerReference{ownerReference(tr, false)},
		},
		Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone,
			Ports: []corev1.ServicePort{
				{Name: webPortName, Port: WebPort, TargetPort: intstr.FromString(webPortName), Protocol: corev1.ProtocolTCP},
				{Name: GRPCPortName, Port: GRPCPort, TargetPort: intstr.FromString(GRPCPortName), Protocol: corev1.ProtocolTCP},
			},
			Selector: map[string]string{labelAppName: appName, labelManagedBy: selectorManagedBy},
		},
	}
}

func statefulSet(tr *monitoringv1.ThanosRuler, opts Options) (*appsv1.StatefulSet, error) {
	s := &tr.Spec
	ruler, err := rulerContainer(tr)
	if err != nil {
		return nil, err
	}
	vols := ruleFiles(tr).Volumes()
	if src := workload.DataVolumeSource(s.Storage); src != nil {
		vols = append(vols, corev1.Volume{Name: dataVolumeName(tr), VolumeSource: *src})
	}
	vols = append(vols, s.Volumes...)
	spec, serr := podFields(tr).PodSpec([]corev1.Container{ruler, reloader(tr, opts).Container(false)}, nil,
		vols, s.ServiceAccountName, defaultTerminationGracePeriod)
	if serr != nil {
		return nil, serr
	}
	podLabels := map[string]string{LabelThanosRuler: tr.Name, labelVersion: strings.TrimPrefix(rulerVersion(tr).Tag(), "v")}
	sts := podFields(tr).StatefulSet(ownedMeta(tr, StatefulSetName(tr.Name)), Replicas(tr), SelectorLabels(tr.Name),
		podLabels, GoverningServiceName(tr), containerRuler, dataVolumeName(tr), spec)
	return sts, nil
}

// rulerResources are spec.resources with the existing operator's default memory request:
// without one the pod is BestEffort on memory, first to go under node pressure. A memory
// limit alone is left alone: Kubernetes makes it the request, and 200Mi above a smaller
// limit would make the pod invalid.
func rulerResources(tr *monitoringv1.ThanosRuler) corev1.ResourceRequirements {
	r := *tr.Spec.Resources.DeepCopy()
	_, request := r.Requests[corev1.ResourceMemory]
	_, limit := r.Limits[corev1.ResourceMemory]
	if !request && !limit {
		if r.Requests == nil {
			r.Requests = corev1.ResourceList{}
		}
		r.Requests[corev1.ResourceMemory] = defaultMemoryRequest
	}
	return r
}

func dataVolumeName(tr *monitoringv1.ThanosRuler) string {
	return workload.DataVolumeName(tr.Spec.Storage, VolumeClaimTemplateName(tr.Name))
}

func routePrefix(tr *monitoringv1.ThanosRuler) string {
	if tr.Spec.RoutePrefix == "" {
		return "/"
	}
	return tr.Spec.RoutePrefix
}

// fileConfigs are the ThanosRuler's file-valued settings, in flag order.
func fileConfigs(tr *monitoringv1.ThanosRuler) []FileConfig {
	s := &tr.Spec
	return []FileConfig{
		{Field: "spec.queryConfig", Flag: "query.config", Env: "QUERY_CONFIG", Secret: s.QueryConfig},
		{Field: "spec.alertmanagersConfig", Flag: "alertmanagers.config", Env: "ALERTMANAGERS_CONFIG", Secret: s.AlertManagersConfig},
		{Field: "spec.objectStorageConfig", Flag: "objstore.config", Env: "OBJSTORE_CONFIG", Secret: s.ObjectStorageConfig, File: workload.Value(s.ObjectStorageConfigFile)},
		{Field: "spec.alertRelabelConfigs", Flag: "alert.relabel-config", Env: "ALERT_RELABEL_CONFIG", Secret: s.AlertRelabelConfigs, File: workload.Value(s.AlertRelabelConfigFile)},
		{Field: "spec.tracingConfig", Flag: "tracing.config", Env: "TRACING_CONFIG", Secret: s.TracingConfig, File: s.TracingConfigFile},
	}
}

// SecretKeys are the Secret keys the ThanosRuler's pods read, "namespace/name" → keys, for
// the controller to check before the pods fail on a missing one.
func SecretKeys(tr *monitoringv1.ThanosRuler) []FileConfig {
	var out []FileConfig
	for _, c := range fileConfigs(tr) {
		if c.Secret != nil {
			out = append(out, c)
		}
	}
	return out
}

// generatedArgs are the flags Lookout derives from the spec, in a fixed order, and the
// environment they read.
func generatedArgs(tr *monitoringv1.ThanosRuler) ([]string, []corev1.EnvVar) {
	s := &tr.Spec
	// listenLocal keeps the web server on loopback; the gRPC StoreAPI stays on every
	// interface, as with the existing operator: Thanos Query reads the ruler's series there.
	httpHost := ""
	if s.ListenLocal {
		httpHost = "127.0.0.1"
	}
	args := []string{
		"rule",
		"--data-dir=" + dataDir,
		"--eval-interval=" + orDefault(string(s.EvaluationInterval), DefaultEvaluationInterval),
		"--tsdb.retention=" + orDefault(string(s.Retention), DefaultRetention),
		"--http-address=" + httpHost + ":" + strconv.Itoa(WebPort),
		"--grpc-address=:" + strconv.Itoa(GRPCPort),
		"--web.route-prefix=" + routePrefix(tr),
		"--label=" + ReplicaLabel + `="$(POD_NAME)"`,
	}
	for _, k := range workload.SortedKeys(s.Labels) {
		args = append(args, "--label="+k+"="+strconv.Quote(s.Labels[k]))
	}
	args = append(args, "--alert.label-drop="+ReplicaLabel)
	for _, l := range workload.Uniq(s.AlertDropLabels) {
		if l != ReplicaLabel {
			args = append(args, "--alert.label-drop="+l)
		}
	}
	args = append(args, "--rule-file="+path.Join(RulesDir, "*", "*.yaml"))
	for _, q := range s.QueryEndpoints {
		args = append(args, "--query="+q)
	}
	for _, u := range s.AlertManagersURL {
		args = append(args, "--alertmanagers.url="+u)
	}
	var env []corev1.EnvVar
	for _, c := range fileConfigs(tr) {
		args, env = c.Apply(args, env)
	}
	tls, _ := GRPCServerTLSArgs("spec.grpcServerTlsConfig", s.GRPCServerTLSConfig, rulerVersion(tr)) // Validate has refused the errors
	args = append(args, tls...)
	for _, d := range []struct {
		flag string
		v    *monitoringv1.Duration
	}{
		{"resend-delay", s.ResendDelay},
		{"for-outage-tolerance", s.RuleOutageTolerance},
		{"for-grace-period", s.RuleGracePeriod},
		{"rule-query-offset", s.RuleQueryOffset},
	} {
		if d.v != nil && *d.v != "" {
			args = append(args, "--"+d.flag+"="+string(*d.v))
		}
	}
	if s.RuleConcurrentEval != nil {
		args = append(args, "--rule-concurrent-evaluation="+strconv.Itoa(int(*s.RuleConcurrentEval)))
	}
	if s.ExternalPrefix != "" {
		args = append(args, "--web.external-prefix="+s.ExternalPrefix)
	}
	if s.AlertQueryURL != "" {
		args = append(args, "--alert.query-url="+s.AlertQueryURL)
	}
	args = append(args, LogArgs(s.LogLevel, s.LogFormat)...)
	for _, f := range workload.Uniq(enableFeatures(s.EnableFeatures)) {
		args = append(args, "--enable-feature="+f)
	}
	return args, env
}

func enableFeatures(in []monitoringv1.EnableFeature) []string {
	out := make([]string, len(in))
	for i, f := range in {
		out[i] = string(f)
	}
	return out
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func rulerContainer(tr *monitoringv1.ThanosRuler) (corev1.Container, error) {
	s := &tr.Spec
	image, err := ImageSpec(&s.Image, workload.Value(s.Version)).Reference()
	if err != nil {
		return corev1.Container{}, err
	}
	args, env := generatedArgs(tr)
	env = append([]corev1.EnvVar{{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{
		FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}}}, env...)
	mounts := append([]corev1.VolumeMount{{Name: dataVolumeName(tr), MountPath: dataDir}}, ruleFiles(tr).Mounts()...)
	mounts = append(mounts, s.VolumeMounts...)
	probe := func(endpoint string) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
				Path: path.Join(routePrefix(tr), endpoint), Port: intstr.FromString(webPortName), Scheme: corev1.URISchemeHTTP,
			}},
			PeriodSeconds: 5, TimeoutSeconds: 3, FailureThreshold: 18,
		}
	}
	c := corev1.Container{
		Name:            containerRuler,
		Image:           image,
		ImagePullPolicy: s.ImagePullPolicy,
		Args:            workload.Args(args, s.AdditionalArgs),
		Env:             env,
		Ports: []corev1.ContainerPort{
			{Name: webPortName, ContainerPort: WebPort, Protocol: corev1.ProtocolTCP},
			{Name: GRPCPortName, ContainerPort: GRPCPort, Protocol: corev1.ProtocolTCP},
		},
		Resources:                rulerResources(tr),
		VolumeMounts:             mounts,
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		SecurityContext:          workload.ContainerSecurityContext(),
	}
	if !s.ListenLocal {
		// Listening on localhost only, the kubelet cannot probe the pod.
		c.ReadinessProbe = probe("/-/ready")
		c.LivenessProbe = probe("/-/healthy")
	}
	return c, nil
}

// reloader watches the rule directories (there is no generated config file) and asks
// Thanos Ruler to reload when the kubelet updates a rule ConfigMap.
func reloader(tr *monitoringv1.ThanosRuler, opts Options) workload.Reloader {
	return workload.Reloader{
		Image:       opts.ReloaderImage,
		PullPolicy:  tr.Spec.ImagePullPolicy,
		ReloadURL:   "http://localhost:" + strconv.Itoa(WebPort) + path.Join(routePrefix(tr), "/-/reload"),
		SidecarArgs: ruleFiles(tr).WatchArgs(),
		Mounts:      ruleFiles(tr).Mounts(),
	}
}
