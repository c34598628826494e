package workload

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Duration is the Prometheus duration syntax (the CRD's pattern for Duration): units
// from years down to milliseconds, each at most once, largest first; or "0".
var durationRE = regexp.MustCompile(`^(?:([0-9]+)y)?(?:([0-9]+)w)?(?:([0-9]+)d)?(?:([0-9]+)h)?(?:([0-9]+)m)?(?:([0-9]+)s)?(?:([0-9]+)ms)?$`)

var durationUnitsMillis = []uint64{365 * 24 * 3600 * 1000, 7 * 24 * 3600 * 1000, 24 * 3600 * 1000, 3600 * 1000, 60 * 1000, 1000, 1}

// ParseDuration returns the duration in milliseconds, refusing values that overflow the
// int64 nanoseconds Prometheus stores durations in (it would refuse to start).
func ParseDuration(s string) (uint64, error) {
	if s == "0" {
		return 0, nil
	}
	m := durationRE.FindStringSubmatch(s)
	if s == "" || m == nil {
		return 0, fmt.Errorf("%q is not a valid duration: use numbers with the units y, w, d, h, m, s, ms, largest first, e.g. %q", s, "15d")
	}
	const maxMillis = math.MaxInt64 / 1_000_000
	var total uint64
	for i, unit := range durationUnitsMillis {
		if m[i+1] == "" {
			continue
		}
		n, err := strconv.ParseUint(m[i+1], 10, 64)
		if err != nil || n > maxMillis/unit || total+n*unit > maxMillis {
			return 0, fmt.Errorf("%q is too long: Prometheus durations must stay under 292 years", s)
		}
		total += n * unit
	}
	return total, nil
}

// goDurationRE is the CRD's pattern for GoDuration (Alertmanager's flags): Go's syntax
// without fractions, e.g. "120h", "1h30m", "200ms".
var goDurationRE = regexp.MustCompile(`^(0|(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$`)

// CheckGoDuration checks a GoDuration field value; "" is accepted (unset).
func CheckGoDuration(field, s string) *SpecError {
	if s != "" && !goDurationRE.MatchString(s) {
		return Invalid(field, "%q is not a valid duration: use numbers with the units h, m, s, ms, largest first, e.g. %q", s, "120h")
	}
	return nil
}

// ByteSizeRE is the Prometheus size syntax (the CRD's pattern for ByteSize).
var ByteSizeRE = regexp.MustCompile(`^(?:0|(?:[0-9]*\.)?[0-9]+(?:[KMGTPE]i?)?B)$`)

// imageRE follows the grammar of container image references: an optional registry host
// (with port), lower-case path components, an optional tag and an optional digest.
var imageRE = func() *regexp.Regexp {
	const (
		hostPart  = `(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])`
		host      = hostPart + `(?:\.` + hostPart + `)*(?::[0-9]+)?`
		component = `[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*`
		tag       = `[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}`
		digest    = `[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}`
	)
	return regexp.MustCompile(`^(?:` + host + `/)?` + component + `(?:/` + component + `)*(?::` + tag + `)?(?:@` + digest + `)?$`)
}()

// Version is a parsed semantic version.
type Version struct {
	Major, Minor, Patch int
	Pre                 string
}

// Tag is the image tag Prometheus-project releases use for the version: "v" and the
// numbers, without build metadata (a '+' is not allowed in tags).
func (v Version) Tag() string {
	t := fmt.Sprintf("v%d.%d.%d", v.Major, v.Minor, v.Patch)
	if v.Pre != "" {
		t += "-" + v.Pre
	}
	return t
}

// AtLeast reports whether v is major.minor or later (pre-releases count as the release).
func (v Version) AtLeast(major, minor int) bool {
	return v.Major > major || v.Major == major && v.Minor >= minor
}

var versionRE = regexp.MustCompile(`^v?(0|[1-9][0-9]*)(?:\.(0|[1-9][0-9]*))?(?:\.(0|[1-9][0-9]*))?(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$`)

// ParseVersion accepts semantic versions with an optional "v" and missing minor or patch
// numbers ("v3", "3.5"), like the existing operator. example names a valid one for the
// error message.
func ParseVersion(s, example string) (Version, error) {
	m := versionRE.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return Version{}, fmt.Errorf("%q is not a semantic version like %q", s, example)
	}
	var v Version
	for i, dst := range []*int{&v.Major, &v.Minor, &v.Patch} {
		if m[i+1] != "" {
			n, err := strconv.Atoi(m[i+1])
			if err != nil {
				return Version{}, fmt.Errorf("%q is not a semantic version like %q", s, example)
			}
			*dst = n
		}
	}
	v.Pre = m[4]
	return v, nil
}

// ImageSpec are the image fields every workload kind has.
type ImageSpec struct {
	Image                       *string
	BaseImage, Tag, SHA         string
	Version                     string
	DefaultBase, DefaultVersion string
}

// Reference is spec.image, else spec.baseImage (or the default) with spec.sha, spec.tag or
// the version's tag, in the existing operator's order of precedence.
func (s ImageSpec) Reference() (string, error) {
	if s.Image != nil && strings.TrimSpace(*s.Image) != "" {
		return strings.TrimSpace(*s.Image), nil
	}
	base := s.DefaultBase
	if s.BaseImage != "" {
		base = s.BaseImage
	}
	switch {
	case s.SHA != "":
		return base + "@sha256:" + s.SHA, nil
	case s.Tag != "":
		return base + ":" + s.Tag, nil
	}
	v, err := s.ParsedVersion()
	if err != nil {
		return "", err
	}
	return base + ":" + v.Tag(), nil
}

// VersionOrDefault is spec.version, or the default when it is empty.
func (s ImageSpec) VersionOrDefault() string {
	if s.Version != "" {
		return s.Version
	}
	return s.DefaultVersion
}

// ParsedVersion is VersionOrDefault parsed.
func (s ImageSpec) ParsedVersion() (Version, error) {
	return ParseVersion(s.VersionOrDefault(), s.DefaultVersion)
}

// Check validates the version and the resulting image reference.
func (s ImageSpec) Check() *SpecError {
	if s.Version != "" {
		if _, err := ParseVersion(s.Version, s.DefaultVersion); err != nil {
			return Invalid("spec.version", "%v", err)
		}
	}
	field := "spec.image"
	if s.Image == nil || *s.Image == "" {
		field = "spec.baseImage"
	}
	image, err := s.Reference()
	if err != nil {
		return Invalid("spec.version", "%v", err)
	}
	if !imageRE.MatchString(image) {
		return Invalid(field, "%q is not a valid image reference (expected [registry/]repository[:tag][@digest], e.g. %q)",
			image, s.DefaultBase+":"+s.DefaultVersion)
	}
	return nil
}

// VolumeName turns prefix-<name> into a valid volume name (a DNS-1123 label): as is when
// it already is one, otherwise sanitized, shortened and suffixed with a hash of the
// original so that different names never map to the same volume.
func VolumeName(prefix, name string) string {
	n := prefix + "-" + name
	if len(validation.IsDNS1123Label(n)) == 0 {
		return n
	}
	sum := sha256.Sum256([]byte(name))
	suffix := "-" + hex.EncodeToString(sum[:])[:8]
	clean := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			return r
		case r >= 'A' && r <= 'Z':
			return r - 'A' + 'a'
		default:
			return '-'
		}
	}, n)
	if max := validation.DNS1123LabelMaxLength - len(suffix); len(clean) > max {
		clean = clean[:max]
	}
	return strings.Trim(clean, "-") + suffix
}

// Uniq drops repeated entries, keeping the first: a name listed twice would make two
// volumes with the same name.
func Uniq(in []string) []string {
	seen := make(map[string]bool, len(in))
	var out []string
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// MergeLabels copies src into dst (made when nil) and returns it.
func MergeLabels(dst map[string]string, src map[string]string) map[string]string {
	if dst == nil {
		dst = map[string]string{}
	}
	maps.Copy(dst, src)
	return dst
}

// SortedKeys returns the keys of m in order.
func SortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Ptr returns a pointer to v.
func Ptr[T any](v T) *T { return &v }

// Value is *p, or the zero value when p is nil.
func Value[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// ValueOr is *p, or def when p is nil.
func ValueOr[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

// Args are the generated flags followed by spec.additionalArgs.
func Args(generated []string, additional []monitoringv1.Argument) []string {
	args := append([]string(nil), generated...)
	for _, a := range additional {
		if a.Value == "" {
			args = append(args, "--"+a.Name)
		} else {
			args = append(args, "--"+a.Name+"="+a.Value)
		}
	}
	return args
}

// CheckAdditionalArgs refuses malformed spec.additionalArgs and flags Lookout sets itself
// (generated), which would be given twice. example is a valid flag name of the kind.
func CheckAdditionalArgs(generated []string, additional []monitoringv1.Argument, example, kind string) *SpecError {
	set := map[string]bool{}
	for _, a := range generated {
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		set[strings.TrimPrefix(name, "no-")] = true
	}
	for i, a := range additional {
		field := fmt.Sprintf("spec.additionalArgs[%d].name", i)
		if a.Name == "" || strings.HasPrefix(a.Name, "-") || strings.ContainsAny(a.Name, "= ") {
			return Invalid(field, "%q must be a flag name without leading dashes, e.g. %q", a.Name, example)
		}
		if set[strings.TrimPrefix(a.Name, "no-")] {
			return Invalid(field, "--%s is set by Lookout from the %s spec; set the corresponding field instead", a.Name, kind)
		}
	}
	return nil
}

// LabelShared marks an object several workloads co-own (a governing Service): each owner
// applies it under a field manager of its own, see Shared.
const LabelShared = "lookout.dev/shared"

// Shared reports whether obj is co-owned by several workloads. Apply must send such an
// object under a field manager of its own per owner (e.g. "lookout/<owner uid>"): with
// one manager, each owner's apply would remove the others' owner references, and deleting
// whichever owner came last would delete the object under the others.
func Shared(obj interface{ GetLabels() map[string]string }) bool {
	return obj.GetLabels()[LabelShared] == "true"
}

// Object is what the renderers return: a typed Kubernetes object. It has the method set of
// controller-runtime's client.Object without the dependency: render stays pure.
type Object interface {
	metav1.Object
	runtime.Object
}
