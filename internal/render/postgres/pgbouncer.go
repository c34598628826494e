package postgres

import (
	"crypto/ecdsa"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	postgresv1beta1 "github.com/lookout-operator/lookout/api/postgres/v1beta1"
	"github.com/lookout-operator/lookout/internal/pgcontract"
	"github.com/lookout-operator/lookout/internal/render/workload"
)

// The pooler (spec.proxy.pgBouncer): a Deployment of `lookout pgbouncer`
// pods, each running Debian's pgbouncer as its child, a Service in front of
// them, and the Secret they read their configuration, userlist and
// certificate from.
//
// Authentication: the userlist holds each user's SCRAM-SHA-256 verifier,
// the same one the instance managers give the role. PgBouncer checks a
// client against it and logs in to PostgreSQL with the keys the client's
// own SCRAM exchange proved (it never sees a password), so no auth_query,
// no extra role and no function in the database is needed, which PGO's
// `_crunchypgbouncer` and its auth_query would require.

// PoolerName names the pooler's Deployment, Service, Secret and RBAC (PGO's
// <cluster>-pgbouncer).
func PoolerName(cluster string) string { return pgcontract.PoolerSecretName(cluster) }

// PoolerCommand is what the pooler container runs.
var PoolerCommand = []string{"/bin/lookout", "pgbouncer"}

// PoolerContainerName is the pooler container (PGO's name).
const PoolerContainerName = "pgbouncer"

// The keys a user Secret gains with a pooler (PGO's).
const (
	KeyPoolerHost    = "pgbouncer-host"
	KeyPoolerPort    = "pgbouncer-port"
	KeyPoolerURI     = "pgbouncer-uri"
	KeyPoolerJDBCURI = "pgbouncer-jdbc-uri"
	// KeyPoolerToken holds the token of the pooler's pause and resume calls.
	KeyPoolerToken = "token"
)

// DefaultPoolMode is the pool_mode Lookout sets unless spec.proxy says
// otherwise: PAUSE waits for transactions, not sessions, to end, so a
// switchover is hidden from clients that keep their connections.
const DefaultPoolMode = "transaction"

// DefaultPoolerPauseTimeout bounds the wait for a pooler to pause.
const DefaultPoolerPauseTimeout = 5 * time.Second

func pooler(c *postgresv1beta1.PostgresCluster) *postgresv1beta1.PGBouncerPodSpec {
	if c.Spec.Proxy == nil {
		return nil
	}
	return c.Spec.Proxy.PGBouncer
}

func poolerPort(b *postgresv1beta1.PGBouncerPodSpec) int32 {
	if b.Port == nil {
		return DefaultPort
	}
	return *b.Port
}

func poolerHost(c *postgresv1beta1.PostgresCluster) string {
	return PoolerName(c.Name) + "." + c.Namespace + ".svc"
}

// poolerToken is the token of the pause and resume calls, kept once made.
func poolerToken(in *Inputs) string {
	if s := in.Secrets[PoolerName(in.Cluster.Name)]; s != nil && len(s.Data[KeyPoolerToken]) > 0 {
		return string(s.Data[KeyPoolerToken])
	}
	return generatePassword(source(in.Seed, "pooler-token"), false)
}

// addPoolerKeys adds PGO's pgbouncer-* keys to a user's Secret data.
func addPoolerKeys(c *postgresv1beta1.PostgresCluster, data map[string][]byte, u postgresv1beta1.PostgresUserSpec, password string) {
	b := pooler(c)
	if b == nil {
		return
	}
	host, p := poolerHost(c), strconv.Itoa(int(poolerPort(b)))
	uri := "postgresql://" + urlUserInfo(u.Name, password) + "@" + host + ":" + p
	jdbc := "jdbc:postgresql://" + host + ":" + p + "/"
	if len(u.Databases) > 0 {
		uri += "/" + urlPathEscape(u.Databases[0])
		jdbc += urlPathEscape(u.Databases[0])
	}
	// Transaction pooling: JDBC must not use server-side prepared statements.
	jdbc += "?password=" + urlQueryEscape(password) + "&prepareThreshold=0&user=" + urlQueryEscape(u.Name)
	data[KeyPoolerHost] = []byte(host)
	data[KeyPoolerPort] = []byte(p)
	data[KeyPoolerURI] = []byte(uri)
	data[KeyPoolerJDBCURI] = []byte(jdbc)
}

// poolerConfig is what the poolers are told.
func poolerConfig(c *postgresv1beta1.PostgresCluster, token string) pgcontract.PoolerConfig {
	b := pooler(c)
	global := maps.Clone(b.Config.Global)
	if global == nil {
		global = map[string]string{}
	}
	if _, ok := global["pool_mode"]; !ok {
		global["pool_mode"] = DefaultPoolMode
	}
	return pgcontract.PoolerConfig{
		Port: int(poolerPort(b)), PostgresPort: int(port(c)),
		Global: global, Databases: maps.Clone(b.Config.Databases), Users: maps.Clone(b.Config.Users),
		Token: token,
	}
}

// userlist is PgBouncer's auth_file: each user with its SCRAM verifier.
func userlist(users []pgcontract.User) []byte {
	var b strings.Builder
	for _, u := range users {
		fmt.Fprintf(&b, "%q %q\n", u.Name, u.Verifier)
	}
	return []byte(b.String())
}

// poolersConfig is what the instance managers are told of the poolers.
func poolersConfig(in *Inputs) *pgcontract.Poolers {
	if pooler(in.Cluster) == nil {
		return nil
	}
	return &pgcontract.Poolers{Token: poolerToken(in), PauseTimeout: pgcontract.Duration{Duration: DefaultPoolerPauseTimeout}}
}

// poolerObjects are the pooler's objects, none without spec.proxy.pgBouncer.
func poolerObjects(in *Inputs, users []pgcontract.User, ca *x509.Certificate, caKey *ecdsa.PrivateKey, caCert []byte) ([]workload.Object, error) {
	c := in.Cluster
	b := pooler(c)
	if b == nil {
		return nil, nil
	}
	token := poolerToken(in)
	name := PoolerName(c.Name)
	cert, key, err := leafCert(in, ca, caKey, name, "pooler", poolerHost(c), poolerNames(c.Name, c.Namespace))
	if err != nil {
		return nil, err
	}
	cfg, err := json.Marshal(poolerConfig(c, token))
	if err != nil {
		return nil, err
	}
	out := []workload.Object{
		secret(c, name, poolerLabels(c), map[string][]byte{
			pgcontract.PoolerConfigKey: cfg, pgcontract.PoolerUserlistKey: userlist(users), KeyPoolerToken: []byte(token),
			KeyCACert: caCert, KeyTLSCert: cert, KeyTLSKey: key,
		}),
	}
	sa, role, binding := poolerRBAC(c)
	out = append(out, sa, role, binding, poolerService(c, b), poolerDeployment(in, b))
	if pdb := poolerDisruptionBudget(c, b); pdb != nil {
		out = append(out, pdb)
	}
	return out, nil
}

func poolerLabels(c *postgresv1beta1.PostgresCluster) map[string]string {
	return map[string]string{pgcontract.LabelCluster: c.Name, pgcontract.LabelRole: pgcontract.RolePooler}
}

// poolerNames are the DNS names of the pooler's Service.
func poolerNames(cluster, ns string) []string {
	svc := PoolerName(cluster)
	return []string{svc, svc + "." + ns, svc + "." + ns + ".svc", svc + "." + ns + ".svc.cluster.local"}
}

// poolerService is <cluster>-pgbouncer, with spec.proxy.pgBouncer.service
// applied as to the primary's Service.
func poolerService(c *postgresv1beta1.PostgresCluster, b *postgresv1beta1.PGBouncerPodSpec) *corev1.Service {
	svc := roleService(c, PoolerName(c.Name), pgcontract.RolePooler, b.Service)
	p := corev1.ServicePort{
		Name: pgcontract.PoolerPortNamePgBouncer, Protocol: corev1.ProtocolTCP,
		Port: poolerPort(b), TargetPort: intstr.FromString(pgcontract.PoolerPortNamePgBouncer),
	}
	if s := b.Service; s != nil && s.NodePort != nil && s.Type != "" && s.Type != string(corev1.ServiceTypeClusterIP) {
		p.NodePort = *s.NodePort
	}
	svc.Spec.Ports = []corev1.ServicePort{p}
	return svc
}

// poolerRBAC lets the poolers read the cluster's Lease (who is primary) and
// list the namespace's pods (the primary's address), nothing else.
func poolerRBAC(c *postgresv1beta1.PostgresCluster) (*corev1.ServiceAccount, *rbacv1.Role, *rbacv1.RoleBinding) {
	name := PoolerName(c.Name)
	return serviceAccountWithRole(c, name, []rbacv1.PolicyRule{
		{APIGroups: []string{coordinationv1.GroupName}, Resources: []string{"leases"},
			ResourceNames: []string{pgcontract.LeaseName(c.Name)}, Verbs: []string{"get", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list"}},
	})
}

const volumePoolerConfig = "pgbouncer-config"

func poolerDeployment(in *Inputs, b *postgresv1beta1.PGBouncerPodSpec) *appsv1.Deployment {
	c := in.Cluster
	labels := poolerLabels(c)
	// Not spec.image, as PGO's default pgBouncer image is the operator's:
	// a new image of the instances (a minor upgrade) must not restart the
	// pooler under its clients.
	image := b.Image
	if image == "" {
		image = in.Image
	}
	uid := in.RunAsUser
	if uid == 0 {
		uid = DefaultRunAsUser
	}
	replicas := int32(1)
	if b.Replicas != nil {
		replicas = *b.Replicas
	}
	if c.Spec.Shutdown != nil && *c.Spec.Shutdown {
		replicas = 0
	}
	mode := int32(0o440)
	container := corev1.Container{
		Name:    PoolerContainerName,
		Image:   image,
		Command: slices.Clone(PoolerCommand),
		Args:    []string{"--cluster=" + c.Name},
		Env: []corev1.EnvVar{
			fieldEnv(pgcontract.EnvPodName, "metadata.name"),
			fieldEnv(pgcontract.EnvPodNamespace, "metadata.namespace"),
			fieldEnv(pgcontract.EnvPodIP, "status.podIP"),
		},
		Ports: []corev1.ContainerPort{
			{Name: pgcontract.PoolerPortNamePgBouncer, ContainerPort: poolerPort(b), Protocol: corev1.ProtocolTCP},
			{Name: pgcontract.PoolerPortName, ContainerPort: pgcontract.PoolerPort, Protocol: corev1.ProtocolTCP},
		},
		Resources: *b.Resources.DeepCopy(),
		VolumeMounts: []corev1.VolumeMount{
			{Name: volumePoolerConfig, MountPath: pgcontract.PoolerConfigDir, ReadOnly: true},
			{Name: volumeTmp, MountPath: "/tmp"},
		},
		// Ready once pgbouncer runs and points at the primary.
		ReadinessProbe:           probeOn(pgcontract.PoolerPortName, pgcontract.PathReady, 2, 3),
		LivenessProbe:            probeOn(pgcontract.PoolerPortName, pgcontract.PathLive, 10, 6),
		SecurityContext:          workload.ContainerSecurityContext(),
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	}
	pod := corev1.PodSpec{
		ServiceAccountName:            PoolerName(c.Name),
		AutomountServiceAccountToken:  workload.Ptr(true),
		EnableServiceLinks:            workload.Ptr(false),
		TerminationGracePeriodSeconds: workload.Ptr(int64(30)),
		Containers:                    []corev1.Container{container},
		SecurityContext:               podSecurityContext(uid),
		Affinity:                      b.Affinity.DeepCopy(),
		Tolerations:                   slices.Clone(b.Tolerations),
		TopologySpreadConstraints:     slices.Clone(b.TopologySpreadConstraints),
		Volumes: []corev1.Volume{
			{Name: volumePoolerConfig, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
				SecretName: PoolerName(c.Name), DefaultMode: &mode}}},
			{Name: volumeTmp, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		},
	}
	// One pod at a time, the new one ready before an old one goes: a
	// rollout never leaves clients without a pooler.
	maxUnavailable, maxSurge := intstr.FromInt32(0), intstr.FromInt32(1)
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: ownedMeta(c, PoolerName(c.Name), labels),
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: &maxUnavailable, MaxSurge: &maxSurge}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{
					Labels:      selectorCopy(labels),
					Annotations: map[string]string{"kubectl.kubernetes.io/default-container": PoolerContainerName},
				},
				Spec: pod,
			},
		},
	}
}

// poolerDisruptionBudget keeps minAvailable poolers (PGO's default: one when
// there is more than one).
func poolerDisruptionBudget(c *postgresv1beta1.PostgresCluster, b *postgresv1beta1.PGBouncerPodSpec) *policyv1.PodDisruptionBudget {
	m := b.MinAvailable
	if m == nil {
		if b.Replicas == nil || *b.Replicas < 2 {
			return nil
		}
		one := intstr.FromInt32(1)
		m = &one
	}
	v := *m
	return &policyv1.PodDisruptionBudget{
		TypeMeta:   metav1.TypeMeta{APIVersion: "policy/v1", Kind: "PodDisruptionBudget"},
		ObjectMeta: ownedMeta(c, PoolerName(c.Name), nil),
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: &v,
			Selector:     &metav1.LabelSelector{MatchLabels: poolerLabels(c)},
		},
	}
}
