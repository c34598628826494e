package postgres

import (
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	postgresv1beta1 "github.com/lookout-operator/lookout/api/postgres/v1beta1"
	"github.com/lookout-operator/lookout/internal/pgcontract"
	"github.com/lookout-operator/lookout/internal/render/workload"
)

// ContainerName is the PostgreSQL container of an instance pod (PGO's name).
const ContainerName = "database"

// InstanceCommand is what the instance container runs: the instance
// manager, a subcommand of the image's lookout binary.
var InstanceCommand = []string{"/bin/lookout", "instance"}

// Volume names in the instance pods.
const (
	volumeTLS     = "tls"
	volumeSecrets = "secrets"
	volumeTmp     = "tmp"
)

// statefulSet is one instance: a StatefulSet of one pod, as PGO lays
// instances out, so that each has its own name, volumes and rollout (see
// docs/postgres-compatibility.md).
func statefulSet(in *Inputs, set *postgresv1beta1.PostgresInstanceSetSpec, setName, instance string) *appsv1.StatefulSet {
	c := in.Cluster
	selector := map[string]string{
		pgcontract.LabelCluster:     c.Name,
		pgcontract.LabelInstanceSet: setName,
		pgcontract.LabelInstance:    instance,
	}
	podReplicas := int32(1)
	if c.Spec.Shutdown != nil && *c.Spec.Shutdown {
		podReplicas = 0
	}
	image := instanceImage(in)
	uid := in.RunAsUser
	if uid == 0 {
		uid = DefaultRunAsUser
	}
	mounts := []corev1.VolumeMount{
		{Name: VolumeData, MountPath: pgcontract.DataMount},
		{Name: volumeTLS, MountPath: pgcontract.TLSDir, ReadOnly: true},
		{Name: volumeSecrets, MountPath: pgcontract.SecretsDir, ReadOnly: true},
		{Name: volumeTmp, MountPath: "/tmp"},
	}
	claims := []corev1.PersistentVolumeClaim{claim(VolumeData, selector, set.DataVolumeClaimSpec)}
	if set.WALVolumeClaimSpec != nil {
		mounts = append(mounts, corev1.VolumeMount{Name: VolumeWAL, MountPath: pgcontract.WALMount})
		claims = append(claims, claim(VolumeWAL, selector, *set.WALVolumeClaimSpec))
	}
	// Secret files are 0640, group postgres (fsGroup): PostgreSQL takes a key
	// file owned by root only so, and refuses one others can read.
	mode := int32(0o640)
	container := corev1.Container{
		Name:    ContainerName,
		Image:   image,
		Command: slices.Clone(InstanceCommand),
		// Which cluster's Lease and config the manager follows, and the data
		// directory of the major it runs (PGO's /pgdata/pg<major>).
		Args: []string{"--cluster=" + c.Name, "--pgdata=" + podPGDATA(in, instance)},
		Env: []corev1.EnvVar{
			fieldEnv(pgcontract.EnvPodName, "metadata.name"),
			fieldEnv(pgcontract.EnvPodNamespace, "metadata.namespace"),
			fieldEnv(pgcontract.EnvPodIP, "status.podIP"),
		},
		Ports: []corev1.ContainerPort{
			{Name: pgcontract.PostgresPortName, ContainerPort: port(c), Protocol: corev1.ProtocolTCP},
			{Name: pgcontract.ManagerPortName, ContainerPort: pgcontract.ManagerPort, Protocol: corev1.ProtocolTCP},
		},
		Resources:    *set.Resources.DeepCopy(),
		VolumeMounts: mounts,
		// Readiness is the instance manager's: PostgreSQL accepts connections
		// in the role the pod is labelled with.
		ReadinessProbe: probe(pgcontract.PathReady, 2, 3),
		// Liveness asks only whether the manager answers: a long recovery or
		// clone must not get the container killed.
		LivenessProbe: probe(pgcontract.PathLive, 10, 6),
		StartupProbe:  probe(pgcontract.PathLive, 2, 30),
		SecurityContext: func() *corev1.SecurityContext {
			sc := workload.ContainerSecurityContext()
			return sc
		}(),
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	}
	pod := corev1.PodSpec{
		ServiceAccountName:            InstanceRBACName(c.Name),
		AutomountServiceAccountToken:  workload.Ptr(true),
		EnableServiceLinks:            workload.Ptr(false),
		TerminationGracePeriodSeconds: workload.Ptr(int64(60)),
		Containers:                    []corev1.Container{container},
		SecurityContext:               podSecurityContext(uid),
		Affinity:                      set.Affinity.DeepCopy(),
		Tolerations:                   slices.Clone(set.Tolerations),
		TopologySpreadConstraints:     slices.Clone(set.TopologySpreadConstraints),
		Volumes: []corev1.Volume{
			{Name: volumeTLS, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
				SecretName: ClusterCertSecretName(c.Name), DefaultMode: &mode}}},
			{Name: volumeSecrets, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
				SecretName: ReplicationSecretName(c.Name), DefaultMode: &mode}}},
			{Name: volumeTmp, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		},
	}
	return &appsv1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
		ObjectMeta: ownedMeta(c, instance, selector),
		Spec: appsv1.StatefulSetSpec{
			Replicas:    &podReplicas,
			ServiceName: PodsServiceName(c.Name),
			Selector:    &metav1.LabelSelector{MatchLabels: selector},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{
					Labels:      selectorCopy(selector),
					Annotations: map[string]string{"kubectl.kubernetes.io/default-container": ContainerName},
				},
				Spec: pod,
			},
			VolumeClaimTemplates: claims,
			PodManagementPolicy:  appsv1.ParallelPodManagement,
			// The claims stay when an instance goes: its data is what a
			// rejoining primary rewinds, and removing data is the user's call.
			PersistentVolumeClaimRetentionPolicy: &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
				WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
				WhenScaled:  appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
			},
		},
	}
}

// podSecurityContext runs a pod's containers as uid (user, group and the
// volumes' group), never as root.
func podSecurityContext(uid int64) *corev1.PodSecurityContext {
	return &corev1.PodSecurityContext{
		RunAsNonRoot:        workload.Ptr(true),
		RunAsUser:           workload.Ptr(uid),
		RunAsGroup:          workload.Ptr(uid),
		FSGroup:             workload.Ptr(uid),
		FSGroupChangePolicy: workload.Ptr(corev1.FSGroupChangeOnRootMismatch),
		SeccompProfile:      &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

func selectorCopy(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func claim(volume string, labels map[string]string, spec corev1.PersistentVolumeClaimSpec) corev1.PersistentVolumeClaim {
	l := selectorCopy(labels)
	l[LabelVolume] = volume
	s := spec.DeepCopy()
	if len(s.AccessModes) == 0 {
		s.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	}
	return corev1.PersistentVolumeClaim{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
		ObjectMeta: metav1.ObjectMeta{Name: volume, Labels: l},
		Spec:       *s,
	}
}

func fieldEnv(name, path string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: path}}}
}

func probe(path string, period, failures int32) *corev1.Probe {
	return probeOn(pgcontract.ManagerPortName, path, period, failures)
}

// probeOn is an HTTP probe of path on the container's port named portName.
func probeOn(portName, path string, period, failures int32) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
			Path: path, Port: intstr.FromString(portName), Scheme: corev1.URISchemeHTTP}},
		PeriodSeconds:    period,
		TimeoutSeconds:   1,
		FailureThreshold: failures,
		SuccessThreshold: 1,
	}
}
