package postgres

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	postgresv1beta1 "github.com/lookout-operator/lookout/api/postgres/v1beta1"
	"github.com/lookout-operator/lookout/internal/pgcontract"
)

// UpgradeTriggerPrefix starts the Switchover.Trigger of the switchover a
// rolling minor upgrade asks for.
const UpgradeTriggerPrefix = "upgrade/"

// minorRollout moves the instances of a cluster to a new image of the same
// major one at a time, with the rolling restart's rules: each render keeps
// every instance's StatefulSet on the image it has, but for at most one
// step decided from the last observed status. A step waits until the
// cluster is whole (every desired instance ready, a primary, every replica
// streaming) and no instance is between images (its StatefulSet names the
// new image and its pod does not run it yet). The streaming replicas go
// first, in name order: the StatefulSet's new template makes its pod
// replaced, and the new pod starts on the same data as a standby of the same
// primary. Then the primary is switched over (through the poolers, as every
// switchover) to a replica on the new image; it rejoins as a replica and is
// moved like the others. A single instance is moved in place.
type minorRollout struct {
	// image is the image the spec asks for; current the image each
	// instance's StatefulSet has (instances without one are new: they start
	// on image).
	image   string
	current map[string]string
	// next is the instance moved to image by this render; switchover the
	// switchover asked for instead.
	next       string
	switchover *pgcontract.Switchover
}

// active: an instance runs another image than the spec's.
func (r *minorRollout) active() bool {
	for _, img := range r.current {
		if img != r.image {
			return true
		}
	}
	return false
}

// newMinorRollout reads the images of the existing StatefulSets and decides
// the step. The spec's image is refused when its tag names another major
// than spec.postgresVersion, or an older minor than an instance runs
// (unless AnnotationAllowMinorDowngrade): nothing is rendered then. A
// change of postgresVersion is no minor upgrade: every instance gets the
// spec's image, as before.
func newMinorRollout(in *Inputs, instances []string) (*minorRollout, error) {
	c := in.Cluster
	r := &minorRollout{image: instanceImage(in), current: map[string]string{}}
	if err := checkImageRelease(c, r.image); err != nil {
		return nil, err
	}
	for _, sts := range in.StatefulSets {
		if img := stsImage(sts); img != "" && slices.Contains(instances, sts.Name) {
			r.current[sts.Name] = img
		}
	}
	shutdown := c.Spec.Shutdown != nil && *c.Spec.Shutdown
	majorChange := c.Status.PostgresVersion != 0 && c.Status.PostgresVersion != c.Spec.PostgresVersion
	if shutdown || majorChange {
		r.current = map[string]string{}
		return r, nil
	}
	if r.active() {
		r.next, r.switchover = r.step(c)
	}
	return r, nil
}

// step is the one step the last observed status calls for: see
// minorRollout.
func (r *minorRollout) step(c *postgresv1beta1.PostgresCluster) (string, *pgcontract.Switchover) {
	s := &c.Status
	if s.Primary == "" || !whole(s.Ready) {
		return "", nil
	}
	running := map[string]string{}
	for _, v := range s.InstanceVersions {
		running[v.Name] = v.Image
	}
	names := make([]string, 0, len(r.current))
	for n := range r.current {
		names = append(names, n)
	}
	slices.Sort(names)
	var replicas []string
	primary := ""
	for _, n := range names {
		pod := PodName(n)
		img, up := running[pod]
		if r.current[n] == r.image && (!up || img != r.image) {
			return "", nil // between images
		}
		switch {
		case pod == s.Primary:
			if r.current[n] != r.image {
				primary = n
			}
		case !streaming(s, pod):
			return "", nil // back to streaming first
		case r.current[n] != r.image:
			replicas = append(replicas, n)
		}
	}
	switch {
	case len(replicas) > 0:
		return replicas[0], nil
	case primary == "":
		return "", nil
	case len(names) == 1:
		return primary, nil
	}
	return "", &pgcontract.Switchover{Trigger: UpgradeTriggerPrefix + strconv.FormatInt(c.Generation, 10) + "/" + s.Primary,
		Type: postgresv1beta1.SwitchoverTypeSwitchover}
}

// config puts the rollout's switchover into cfg. While instances change
// images the rolling restart steps aside (a new pod starts with every
// parameter applied); a switchover the user asked for comes first, and no
// instance is moved meanwhile.
func (r *minorRollout) config(cfg *pgcontract.Config) {
	if !r.active() {
		return
	}
	cfg.Restart = nil
	if cfg.Switchover != nil && strings.HasPrefix(cfg.Switchover.Trigger, RestartTriggerPrefix) {
		cfg.Switchover = nil
	}
	if cfg.Switchover != nil {
		r.next = ""
		return
	}
	cfg.Switchover = r.switchover
}

// setImage gives the instance's StatefulSet the image it keeps, or the new
// one when it is this render's step.
func (r *minorRollout) setImage(sts *appsv1.StatefulSet) {
	img, ok := r.current[sts.Name]
	if !ok || sts.Name == r.next {
		img = r.image
	}
	for i := range sts.Spec.Template.Spec.Containers {
		if c := &sts.Spec.Template.Spec.Containers[i]; c.Name == ContainerName {
			c.Image = img
		}
	}
}

// InstanceImage is the image cluster c asks its instances to run: its
// spec.image, else the operator's default.
func InstanceImage(c *postgresv1beta1.PostgresCluster, defaultImage string) string {
	if c.Spec.Image != "" {
		return c.Spec.Image
	}
	return defaultImage
}

func stsImage(sts *appsv1.StatefulSet) string {
	for _, c := range sts.Spec.Template.Spec.Containers {
		if c.Name == ContainerName {
			return c.Image
		}
	}
	return ""
}

// tagRelease finds a PostgreSQL release (major ≥ 10, "15.20") in an image's
// tag: PGO's images are tagged "ubi8-15.4-0", Docker's "15.20-bookworm",
// Lookout's per release "15.20". A tag without one (Lookout's default image
// is tagged with the operator's version) gives "", and only what the
// instances report tells the release.
func tagRelease(image string) (major, minor int, ok bool) {
	if i := strings.LastIndex(image, "@"); i >= 0 {
		image = image[:i]
	}
	i := strings.LastIndex(image, ":")
	if i < 0 || i < strings.LastIndex(image, "/") {
		return 0, 0, false
	}
	for _, m := range releaseInTag.FindAllStringSubmatch(image[i+1:], -1) {
		major, _ = strconv.Atoi(m[1])
		minor, _ = strconv.Atoi(m[2])
		if major >= 10 {
			return major, minor, true
		}
	}
	return 0, 0, false
}

var releaseInTag = regexp.MustCompile(`(?:^|[^0-9.])(\d+)\.(\d+)(?:$|[^0-9.])`)

// serverRelease is the major and minor of a version PostgreSQL reports
// ("15.20 (Debian 15.20-0+deb12u1)").
func serverRelease(v string) (major, minor int, ok bool) {
	maj, rest, found := strings.Cut(firstField(v), ".")
	if !found {
		return 0, 0, false
	}
	var err1, err2 error
	major, err1 = strconv.Atoi(maj)
	minor, err2 = strconv.Atoi(rest)
	return major, minor, err1 == nil && err2 == nil
}

// checkImageRelease refuses an image whose tag names another major than
// spec.postgresVersion (a major upgrade is a change of postgresVersion),
// or a minor older than one an instance runs, unless the cluster carries
// AnnotationAllowMinorDowngrade.
func checkImageRelease(c *postgresv1beta1.PostgresCluster, image string) error {
	major, minor, ok := tagRelease(image)
	if !ok {
		return nil
	}
	if major != c.Spec.PostgresVersion {
		return specError("spec.image", postgresv1beta1.ReasonImageMajor,
			"image %s carries PostgreSQL %d, spec.postgresVersion is %d: a major upgrade changes spec.postgresVersion", image, major, c.Spec.PostgresVersion)
	}
	if c.Annotations[postgresv1beta1.AnnotationAllowMinorDowngrade] == "true" {
		return nil
	}
	for _, v := range c.Status.InstanceVersions {
		if vmaj, vmin, ok := serverRelease(v.Version); ok && vmaj == major && vmin > minor {
			return specError("spec.image", postgresv1beta1.ReasonMinorDowngrade,
				"image %s carries PostgreSQL %d.%d, older than the %s instance %s runs: a minor downgrade is refused (annotate the cluster %s=true to roll it out)",
				image, major, minor, v.Version, v.Name, postgresv1beta1.AnnotationAllowMinorDowngrade)
		}
	}
	return nil
}

// instanceVersions is what each instance pod runs: its image and the
// release its server reports, by pod name.
func instanceVersions(obs Observed) []postgresv1beta1.InstanceVersion {
	var out []postgresv1beta1.InstanceVersion
	for _, p := range obs.Pods {
		v := postgresv1beta1.InstanceVersion{Name: p.Name}
		for _, c := range p.Spec.Containers {
			if c.Name == ContainerName {
				v.Image = c.Image
			}
		}
		if st := obs.Instances[p.Name]; st != nil {
			v.Version = firstField(st.PostgresVersion)
		}
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b postgresv1beta1.InstanceVersion) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// MinorUpgradeCondition is the MinorUpgrade condition of c after its status
// was observed, for image (the spec's, or the operator's default): True
// while an instance pod runs another image, or the cluster is not whole
// again after one did; False (Upgraded) once every instance runs it, with
// how long since the condition became True. Nil while nothing changes it
// (never upgraded, or done already), and for a change of major.
func MinorUpgradeCondition(c *postgresv1beta1.PostgresCluster, image string, now time.Time) *metav1.Condition {
	s := &c.Status
	if s.PostgresVersion != 0 && s.PostgresVersion != c.Spec.PostgresVersion {
		return nil
	}
	prev := meta.FindStatusCondition(s.Conditions, postgresv1beta1.ConditionMinorUpgrade)
	upgrading := prev != nil && prev.Status == metav1.ConditionTrue
	var on, behind []string
	for _, v := range s.InstanceVersions {
		d := v.Name
		if v.Version != "" {
			d += " " + v.Version
		}
		if v.Name == s.Primary {
			d += " (primary)"
		}
		if v.Image == image {
			on = append(on, d)
		} else {
			behind = append(behind, d)
		}
	}
	switch {
	case len(behind) > 0:
		return &metav1.Condition{Type: postgresv1beta1.ConditionMinorUpgrade, Status: metav1.ConditionTrue, Reason: postgresv1beta1.ReasonUpgrading,
			Message: fmt.Sprintf("rolling to %s: %d of %d instances on it (%s); still on another image: %s",
				image, len(on), len(on)+len(behind), orNone(on), strings.Join(behind, ", "))}
	case !upgrading:
		return nil
	case s.Primary == "" || !whole(s.Ready):
		return &metav1.Condition{Type: postgresv1beta1.ConditionMinorUpgrade, Status: metav1.ConditionTrue, Reason: postgresv1beta1.ReasonUpgrading,
			Message: fmt.Sprintf("rolling to %s: every instance pod runs it (%s), waiting for %s ready and a primary", image, orNone(on), s.Ready)}
	}
	return &metav1.Condition{Type: postgresv1beta1.ConditionMinorUpgrade, Status: metav1.ConditionFalse, Reason: postgresv1beta1.ReasonUpgraded,
		Message: fmt.Sprintf("every instance runs %s (%s); the rolling upgrade took %s", image, strings.Join(on, ", "),
			now.Sub(prev.LastTransitionTime.Time).Round(time.Second))}
}

func firstField(s string) string {
	if f := strings.Fields(s); len(f) > 0 {
		return f[0]
	}
	return ""
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
