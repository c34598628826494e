package prometheus

import (
	"path"
	"strconv"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ConfigPieceSlots is how many config-piece Secrets every pod mounts (as
// optional volumes, so the number in use never changes the pod template).
// A configuration too large for one Secret is split into pieces that the
// main prometheus.yaml loads with scrape_config_files.
const ConfigPieceSlots = 16

// ConfigPieceKey is the key of a piece in its Secret.
const ConfigPieceKey = "scrape.yaml.gz"

// ConfigPiecesGlob is the scrape_config_files pattern: the reloader writes
// each piece, substituted, next to the main configuration.
const ConfigPiecesGlob = configOutDir + "/scrape-*.yaml"

const configPiecesDir = "/etc/prometheus/scrape"

// ConfigPieceSecretName is the Secret of piece i.
func ConfigPieceSecretName(name string, i int) string { return Server.ConfigPieceSecretName(name, i) }

func configPieceSecrets(p *monitoringv1.Prometheus, opts Options) []*corev1.Secret {
	out := make([]*corev1.Secret, 0, len(opts.ConfigPieces))
	for i, gz := range opts.ConfigPieces {
		out = append(out, &corev1.Secret{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: ownedMeta(p, opts, FlavourOf(p).ConfigPieceSecretName(p.Name, i)),
			Type:       corev1.SecretTypeOpaque,
			Data:       map[string][]byte{ConfigPieceKey: gz},
		})
	}
	return out
}

func configPieceVolumeName(i int) string { return "config-piece-" + strconv.Itoa(i) }

func configPieceVolumes(p *monitoringv1.Prometheus) []corev1.Volume {
	vols := make([]corev1.Volume, 0, ConfigPieceSlots)
	for i := range ConfigPieceSlots {
		vols = append(vols, corev1.Volume{Name: configPieceVolumeName(i), VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: FlavourOf(p).ConfigPieceSecretName(p.Name, i),
			Optional:   ptrTo(true),
		}}})
	}
	return vols
}

func configPieceMounts() []corev1.VolumeMount {
	mounts := make([]corev1.VolumeMount, 0, ConfigPieceSlots)
	for i := range ConfigPieceSlots {
		mounts = append(mounts, corev1.VolumeMount{Name: configPieceVolumeName(i), MountPath: path.Join(configPiecesDir, strconv.Itoa(i)), ReadOnly: true})
	}
	return mounts
}

// configPieceArgs tell the reloader, for each slot, where the piece is
// mounted, where to write it and which Secret to watch.
func configPieceArgs(p *monitoringv1.Prometheus) []string {
	args := make([]string, 0, ConfigPieceSlots)
	for i := range ConfigPieceSlots {
		args = append(args, "--config-piece="+path.Join(configPiecesDir, strconv.Itoa(i), ConfigPieceKey)+
			"="+path.Join(configOutDir, "scrape-"+strconv.Itoa(i)+".yaml")+
			"="+p.Namespace+"/"+FlavourOf(p).ConfigPieceSecretName(p.Name, i))
	}
	return args
}

// ConfigPieceSecretNames are the Secrets every piece slot of p's configuration goes to.
func ConfigPieceSecretNames(p *monitoringv1.Prometheus) []string {
	names := make([]string, 0, ConfigPieceSlots)
	for i := range ConfigPieceSlots {
		names = append(names, FlavourOf(p).ConfigPieceSecretName(p.Name, i))
	}
	return names
}
