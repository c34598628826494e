// Package install defines everything that runs the operator in a cluster:
// Namespace, ServiceAccount, RBAC (from controller.Permissions), Deployment,
// Services, the ValidatingWebhookConfiguration (from the webhook package),
// PodDisruptionBudget, NetworkPolicy and the self-monitoring objects. The
// kustomize base and overlays under config/, the Helm chart under
// charts/lookout and the single-file bundle lookout.yaml are all written from
// these objects by hack/install, so the three install paths cannot drift
// apart, from each other or from what the code needs.
package install

import (
	"fmt"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/json"

	postgresv1beta1 "github.com/lookout-operator/lookout/api/postgres/v1beta1"
	"github.com/lookout-operator/lookout/internal/controller"
	"github.com/lookout-operator/lookout/internal/pgcontract"
	pgrender "github.com/lookout-operator/lookout/internal/render/postgres"
	"github.com/lookout-operator/lookout/internal/render/workload"
	"github.com/lookout-operator/lookout/internal/version"
	"github.com/lookout-operator/lookout/internal/webhook"
)

// Names every install path uses. The webhook names are the operator's flag
// defaults, so the Deployment passes none of them.
const (
	DefaultNamespace   = "lookout-system"
	Name               = "lookout"
	MetricsServiceName = "lookout-metrics"
	DashboardName      = "lookout-dashboard"
	WebhookCertDir     = "/var/run/lookout/webhook-certs"
	MetricsPort        = 8080
	ProbePort          = 8081
	// Version is the release the committed manifests point at (they cannot follow
	// git describe); `make images VERSION=<it>` builds the images they name.
	Version = "v0.1.0"
	// ImageRepo and ReloaderRepo are where the release images are published, as the
	// operator names its own default reloader image.
	ImageRepo     = version.ImageRepository + "/lookout"
	ReloaderRepo  = version.ImageRepository + "/lookout-reloader"
	runAsUser     = 65532
	leaderLeaseID = "lookout-operator-leader"
)

// Options choose between the variants of the install. The zero value plus
// Namespace is the default install: all namespaces, webhook with managed
// certificates, self-monitoring.
type Options struct {
	Namespace string
	// Image and ReloaderImage default to the release images of Version.
	Image, ReloaderImage string
	Replicas             int32
	// WatchNamespaces, when set, is --namespaces: the namespaced objects'
	// rules become a Role in each of them instead of a ClusterRole.
	WatchNamespaces []string
	// NoWebhook turns the webhook off (--webhook=false, no Service, no
	// configuration, no webhook ingress).
	NoWebhook bool
	// WebhookConversion points the AlertmanagerConfig CRD's conversion at
	// the webhook (--webhook-conversion). Off by default, as upstream: the
	// CRD outlives the install, and a conversion left pointing at a removed
	// Service breaks every v1beta1 read of AlertmanagerConfigs and the
	// deletion of every namespace holding one.
	WebhookConversion bool
	// CertManager: cert-manager issues the webhook certificate into
	// CertSecret and injects the CA; the operator manages neither.
	CertManager bool
	// NoSelfMonitoring leaves out the dashboard and --self-monitoring (the
	// ServiceMonitor, PodMonitor and PrometheusRule the operator applies).
	NoSelfMonitoring bool
	// GenerateRBAC: the operator gives the generated pods their RBAC
	// (--manage-rbac), and holds write rights on ClusterRoles, Roles and
	// bindings to do so (controller.FeatureGenerateRBAC says what that costs).
	GenerateRBAC bool
	// ClusterName names the cluster-scoped objects: ClusterRoles and their
	// bindings (ClusterName, ClusterName-watched), the Roles in watched
	// namespaces and the ValidatingWebhookConfiguration; default Name. Two
	// installs in different namespaces need different ones.
	ClusterName string
	// InstallCRDs: the operator applies the CRDs embedded in it at start
	// (--install-crds), instead of the install shipping them.
	InstallCRDs bool
	// APIServerPorts, when set, limits the NetworkPolicy's egress to DNS and
	// these ports (the apiserver's endpoint ports, after the kubernetes
	// Service's DNAT), to APIServerCIDRs when those are set too. Unset, egress
	// is open: no port list fits every distribution (443, 6443, 8443 on
	// minikube and hardened kubeadm, 16443 on MicroK8s), and a wrong one
	// locks the operator out of the apiserver.
	APIServerPorts []int32
	APIServerCIDRs []string
	// Postgres adds PostgreSQL: the PostgresCluster CRD (config/postgres/crd),
	// the rights of its controller, and the controller in --controllers.
	Postgres bool
	// NoMonitoring leaves monitoring out: no monitoring.coreos.com CRDs,
	// rights, controllers or self-monitoring. With Postgres it is the
	// PostgreSQL-only install.
	NoMonitoring bool
}

// Monitoring reports whether o installs the monitoring system.
func (o Options) Monitoring() bool { return !o.NoMonitoring }

// selfMonitoring reports whether the operator applies its ServiceMonitor,
// PodMonitor and PrometheusRule (they need the monitoring CRDs).
func (o Options) selfMonitoring() bool { return o.Monitoring() && !o.NoSelfMonitoring }

// Controllers are the controllers o runs (--controllers): named, not left to
// the CRDs a cluster happens to serve, so that an install of one system
// never takes over the objects of the other's operator (PGO's
// PostgresClusters, prometheus-operator's Prometheuses).
func Controllers(o Options) []string {
	var out []string
	for _, c := range controller.ControllerNames {
		if c.Kind.Group == postgresGroup {
			if o.Postgres {
				out = append(out, c.Name)
			}
		} else if o.Monitoring() {
			out = append(out, c.Name)
		}
	}
	return out
}

const controllersArg = "--controllers="

var postgresGroup = postgresv1beta1.GroupVersion.Group

func (o *Options) defaults() {
	if o.Namespace == "" {
		o.Namespace = DefaultNamespace
	}
	if o.Image == "" {
		o.Image = ImageRepo + ":" + Version
	}
	if o.ReloaderImage == "" {
		o.ReloaderImage = ReloaderRepo + ":" + Version
	}
	if o.Replicas == 0 {
		o.Replicas = 2
	}
	if o.ClusterName == "" {
		o.ClusterName = Name
	}
}

// CertSecret is the Secret cert-manager writes the webhook certificate into
// (the operator's own is webhook.DefaultSecretName).
const CertSecret = "lookout-webhook-cert"

// Group is a set of objects that belongs together: one file in the kustomize
// base, one template in the chart.
type Group struct {
	File    string
	Objects []runtime.Object
}

// Labels on every install object. Not app.kubernetes.io/managed-by=lookout:
// that marks the objects the operator generates and caches.
func Labels() map[string]string {
	return map[string]string{"app.kubernetes.io/name": Name, "app.kubernetes.io/part-of": Name}
}

// podLabels select the operator's pods.
func podLabels() map[string]string {
	return map[string]string{"app.kubernetes.io/name": Name, "app.kubernetes.io/component": "operator"}
}

func meta(name, namespace string, extra map[string]string) metav1.ObjectMeta {
	l := Labels()
	for k, v := range extra {
		l[k] = v
	}
	return metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: l}
}

// Groups returns the install for o, in apply order.
func Groups(o Options) []Group {
	o.defaults()
	gs := []Group{
		{File: "namespace.yaml", Objects: []runtime.Object{Namespace(o)}},
		{File: "serviceaccount.yaml", Objects: []runtime.Object{ServiceAccount(o)}},
		{File: "rbac.yaml", Objects: RBAC(o)},
		{File: "deployment.yaml", Objects: []runtime.Object{Deployment(o)}},
		{File: "pdb.yaml", Objects: []runtime.Object{PodDisruptionBudget(o)}},
		{File: "networkpolicy.yaml", Objects: []runtime.Object{NetworkPolicy(o)}},
		{File: "metrics-service.yaml", Objects: []runtime.Object{MetricsService(o)}},
	}
	if !o.NoWebhook {
		gs = append(gs, Group{File: "webhook.yaml", Objects: []runtime.Object{WebhookService(o), WebhookConfiguration(o)}})
	}
	if o.selfMonitoring() {
		gs = append(gs, Group{File: "dashboard.yaml", Objects: []runtime.Object{Dashboard(o)}})
	}
	return gs
}

// Objects is every object of Groups, in order.
func Objects(o Options) []runtime.Object {
	var out []runtime.Object
	for _, g := range Groups(o) {
		out = append(out, g.Objects...)
	}
	return out
}

// Namespace is the operator's namespace, labelled for the Pod Security
// "restricted" profile the operator's pod passes.
func Namespace(o Options) *corev1.Namespace {
	o.defaults()
	ns := &corev1.Namespace{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: meta(o.Namespace, "", map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}),
	}
	return ns
}

// ServiceAccount is the operator's identity.
func ServiceAccount(o Options) *corev1.ServiceAccount {
	o.defaults()
	return &corev1.ServiceAccount{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta: meta(Name, o.Namespace, nil),
	}
}

const manageRBACArg = "--manage-rbac"

// Args are the operator's command-line arguments for o.
func Args(o Options) []string {
	o.defaults()
	args := []string{
		"operator",
		"--reloader-image=" + o.ReloaderImage,
		fmt.Sprintf("--metrics-bind-address=:%d", MetricsPort),
		fmt.Sprintf("--health-probe-bind-address=:%d", ProbePort),
		"--webhook-cert-dir=" + WebhookCertDir,
		controllersArg + strings.Join(Controllers(o), ","),
	}
	// Explicit either way: the Deployment says whether the operator writes RBAC.
	if o.GenerateRBAC {
		args = append(args, manageRBACArg)
	} else {
		args = append(args, manageRBACArg+"=false")
	}
	// Before the variants' arguments: an overlay appends its own after the base's.
	if o.selfMonitoring() {
		args = append(args, "--self-monitoring")
	}
	if len(o.WatchNamespaces) > 0 {
		args = append(args, "--namespaces="+strings.Join(o.WatchNamespaces, ","))
	}
	if o.NoWebhook {
		args = append(args, "--webhook=false")
	}
	if o.CertManager {
		args = append(args, "--webhook-manage-certs=false", "--webhook-ca-inject-from="+o.Namespace+"/"+webhook.DefaultServiceName)
	}
	if o.ClusterName != webhook.DefaultConfigurationName && !o.NoWebhook {
		args = append(args, "--webhook-configuration="+o.ClusterName)
	}
	if o.WebhookConversion && !o.NoWebhook {
		args = append(args, "--webhook-conversion")
	}
	if o.InstallCRDs {
		args = append(args, "--install-crds")
	}
	return args
}

// Deployment runs the operator: replicas with leader election (every replica
// serves the webhook), probes, a securityContext that passes Pod Security
// "restricted", a read-only root filesystem with the webhook certificates in
// an emptyDir (or cert-manager's Secret).
func Deployment(o Options) *appsv1.Deployment {
	o.defaults()
	certVolume := corev1.Volume{Name: "webhook-certs", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
	if o.CertManager {
		certVolume.VolumeSource = corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: CertSecret}}
	}
	probe := func(path string) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromString("probes")}}}
	}
	liveness := probe("/healthz")
	liveness.InitialDelaySeconds = 15
	liveness.PeriodSeconds = 20
	readiness := probe("/readyz")
	readiness.PeriodSeconds = 10
	ports := []corev1.ContainerPort{
		{Name: "metrics", ContainerPort: MetricsPort, Protocol: corev1.ProtocolTCP},
		{Name: "probes", ContainerPort: ProbePort, Protocol: corev1.ProtocolTCP},
	}
	if !o.NoWebhook {
		ports = append(ports, corev1.ContainerPort{Name: "webhook", ContainerPort: webhook.DefaultPort, Protocol: corev1.ProtocolTCP})
	}
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: meta(Name, o.Namespace, map[string]string{"app.kubernetes.io/component": "operator"}),
		Spec: appsv1.DeploymentSpec{
			Replicas: &o.Replicas,
			Selector: &metav1.LabelSelector{MatchLabels: podLabels()},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels()},
				Spec: corev1.PodSpec{
					ServiceAccountName:            Name,
					SecurityContext:               PodSecurityContext(),
					TerminationGracePeriodSeconds: ptr(30),
					Containers: []corev1.Container{{
						Name:  "operator",
						Image: o.Image,
						Args:  Args(o),
						Env: []corev1.EnvVar{{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{
							FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}},
						Ports:           ports,
						LivenessProbe:   liveness,
						ReadinessProbe:  readiness,
						Resources:       Resources(),
						SecurityContext: ContainerSecurityContext(),
						VolumeMounts:    []corev1.VolumeMount{{Name: "webhook-certs", MountPath: WebhookCertDir, ReadOnly: o.CertManager}},
					}},
					Volumes: []corev1.Volume{certVolume},
					// Replicas on different nodes, so that one node going
					// away leaves a standby and a webhook server.
					Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
						PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
							Weight: 100,
							PodAffinityTerm: corev1.PodAffinityTerm{
								TopologyKey:   "kubernetes.io/hostname",
								LabelSelector: &metav1.LabelSelector{MatchLabels: podLabels()},
							},
						}},
					}},
				},
			},
		},
	}
}

// PodSecurityContext passes Pod Security "restricted", as the generated
// pods' does, with the non-root user of the operator's image.
func PodSecurityContext() *corev1.PodSecurityContext {
	return workload.PodSecurityContext(&corev1.PodSecurityContext{
		RunAsUser:  ptr(runAsUser),
		RunAsGroup: ptr(runAsUser),
		FSGroup:    ptr(runAsUser),
	})
}

// ContainerSecurityContext is the generated containers' "restricted" one.
func ContainerSecurityContext() *corev1.SecurityContext {
	return workload.ContainerSecurityContext()
}

// Resources: what the operator holds is its informer caches, which grow with
// the cluster (docs/benchmarks.md); the limit leaves room for a large one.
func Resources() corev1.ResourceRequirements {
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
	}
}

// PodDisruptionBudget lets voluntary disruptions take one replica at a time,
// so that with two or more the leader's standby and a webhook server stay.
// maxUnavailable, not minAvailable: with one replica (an overlay or value
// that scales down) a drain still goes through instead of blocking forever.
func PodDisruptionBudget(o Options) *policyv1.PodDisruptionBudget {
	o.defaults()
	one := intstr.FromInt32(1)
	return &policyv1.PodDisruptionBudget{
		TypeMeta:   metav1.TypeMeta{APIVersion: "policy/v1", Kind: "PodDisruptionBudget"},
		ObjectMeta: meta(Name, o.Namespace, nil),
		Spec:       policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &one, Selector: &metav1.LabelSelector{MatchLabels: podLabels()}},
	}
}

// NetworkPolicy lets in only the apiserver's webhook calls and metrics
// scrapes. Egress is open unless o.APIServerPorts is set: the apiserver is no
// pod, so a policy can name it only by port and address, both of which vary
// by distribution, and kube-prometheus's operator policy allows all egress
// for the same reason.
func NetworkPolicy(o Options) *networkingv1.NetworkPolicy {
	o.defaults()
	tcp, udp := corev1.ProtocolTCP, corev1.ProtocolUDP
	port := func(p corev1.Protocol, n int32) networkingv1.NetworkPolicyPort {
		v := intstr.FromInt32(n)
		return networkingv1.NetworkPolicyPort{Protocol: &p, Port: &v}
	}
	ingress := []networkingv1.NetworkPolicyPort{port(tcp, MetricsPort)}
	if !o.NoWebhook {
		ingress = append(ingress, port(tcp, webhook.DefaultPort))
	}
	egress := []networkingv1.NetworkPolicyEgressRule{{}}
	if len(o.APIServerPorts) > 0 {
		api := networkingv1.NetworkPolicyEgressRule{}
		for _, p := range o.APIServerPorts {
			api.Ports = append(api.Ports, port(tcp, p))
		}
		for _, c := range o.APIServerCIDRs {
			api.To = append(api.To, networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: c}})
		}
		egress = []networkingv1.NetworkPolicyEgressRule{
			{Ports: []networkingv1.NetworkPolicyPort{port(udp, 53), port(tcp, 53)}},
			api,
		}
		if o.Postgres {
			// The controller reads each instance manager's status endpoint.
			egress = append(egress, networkingv1.NetworkPolicyEgressRule{Ports: []networkingv1.NetworkPolicyPort{port(tcp, pgcontract.ManagerPort)}})
		}
	}
	return &networkingv1.NetworkPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
		ObjectMeta: meta(Name, o.Namespace, nil),
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: podLabels()},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
			Ingress:     []networkingv1.NetworkPolicyIngressRule{{Ports: ingress}},
			Egress:      egress,
		},
	}
}

// MetricsService is in front of every replica's metrics port.
func MetricsService(o Options) *corev1.Service {
	o.defaults()
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: meta(MetricsServiceName, o.Namespace, map[string]string{"app.kubernetes.io/component": "metrics"}),
		Spec: corev1.ServiceSpec{
			Selector: podLabels(),
			Ports:    []corev1.ServicePort{{Name: "metrics", Port: MetricsPort, TargetPort: intstr.FromString("metrics"), Protocol: corev1.ProtocolTCP}},
		},
	}
}

// WebhookService is the Service the apiserver calls (webhook.DefaultServiceName).
func WebhookService(o Options) *corev1.Service {
	o.defaults()
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: meta(webhook.DefaultServiceName, o.Namespace, nil),
		Spec: corev1.ServiceSpec{
			Selector: podLabels(),
			Ports: []corev1.ServicePort{{Name: "webhook", Port: webhook.DefaultServicePort,
				TargetPort: intstr.FromString("webhook"), Protocol: corev1.ProtocolTCP}},
		},
	}
}

// WebhookConfiguration is exactly what the operator applies, minus the CA
// bundle it adds (or cert-manager's cainjector, from the annotation).
func WebhookConfiguration(o Options) *admissionregistrationv1.ValidatingWebhookConfiguration {
	o.defaults()
	wo := webhook.Options{
		Namespace:         o.Namespace,
		ConfigurationName: o.ClusterName,
		ManageCerts:       !o.CertManager,
		CAInjectFrom:      caInjectFrom(o),
		NoMonitoring:      !o.Monitoring(),
	}
	if o.Postgres {
		// The configuration names the kind; what the operator can run is its own.
		wo.Postgres = &pgrender.Installation{}
	}
	ac := webhook.Configuration(wo)
	var out admissionregistrationv1.ValidatingWebhookConfiguration
	convert(ac, &out)
	out.APIVersion, out.Kind = "admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration"
	for k, v := range Labels() {
		out.Labels[k] = v
	}
	return &out
}

func caInjectFrom(o Options) string {
	if !o.CertManager {
		return ""
	}
	return o.Namespace + "/" + webhook.DefaultServiceName
}

// ServiceMonitor scrapes the operator's metrics Service.
func ServiceMonitor(o Options) *monitoringv1.ServiceMonitor {
	o.defaults()
	return &monitoringv1.ServiceMonitor{
		TypeMeta:   metav1.TypeMeta{APIVersion: "monitoring.coreos.com/v1", Kind: "ServiceMonitor"},
		ObjectMeta: meta(Name, o.Namespace, nil),
		Spec: monitoringv1.ServiceMonitorSpec{
			Selector:  metav1.LabelSelector{MatchLabels: MetricsService(o).Labels},
			Endpoints: []monitoringv1.Endpoint{{Port: "metrics"}},
		},
	}
}

// convert copies between two representations of one object through JSON.
func convert(from, to any) {
	b, err := json.Marshal(from)
	if err != nil {
		panic(fmt.Sprintf("install: marshal %T: %v", from, err))
	}
	if err := json.Unmarshal(b, to); err != nil {
		panic(fmt.Sprintf("install: unmarshal into %T: %v", to, err))
	}
}

var ptr = workload.Ptr[int64]

func typeMeta(kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: kind}
}
