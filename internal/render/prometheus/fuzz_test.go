package prometheus

import (
	"errors"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// FuzzObjects feeds arbitrary user-written strings through Validate and Objects: neither
// may panic, a refusal is always a *SpecError, and an accepted spec renders StatefulSets
// whose names and args are what the rest of the system relies on.
func FuzzObjects(f *testing.F) {
	f.Add("k8s", "15d", "50GB", "", "v3.15.0", int32(1), int32(1))
	f.Add("a", "1y2w3d4h5m6s7ms", "1.5TiB", "registry:5000/p/prometheus:v3@sha256:0123456789abcdef0123456789abcdef", "3", int32(0), int32(3))
	f.Add("x-y", "300y", "50", "Bad Image", "latest", int32(-1), int32(-2))
	f.Fuzz(func(t *testing.T, name, retention, size, image, version string, replicas, shards int32) {
		p := newPrometheus(withName("monitoring", name), withRetention(retention), withRetentionSize(size),
			withVersion(version), withReplicas(replicas), withShards(shards))
		if image != "" {
			p.Spec.Image = &image
		}
		objs, err := Objects(p, newOptions())
		if err != nil {
			var se *SpecError
			if !errors.As(err, &se) || se.Field == "" || se.Message == "" {
				t.Fatalf("refusal %v is not a complete *SpecError", err)
			}
			return
		}
		sets := find[*appsv1.StatefulSet](objs)
		if int32(len(sets)) != ShardCount(p) {
			t.Fatalf("%d StatefulSets for %d shards", len(sets), ShardCount(p))
		}
		for _, sts := range sets {
			if len(sts.Name) > maxStatefulSetNameLength || len(validation.IsDNS1123Label(sts.Name)) > 0 {
				t.Fatalf("StatefulSet name %q", sts.Name)
			}
			args := container(t, sts.Spec.Template.Spec.Containers, "prometheus").Args
			if retention != "" && !slices.Contains(args, "--storage.tsdb.retention.time="+retention) {
				t.Fatalf("retention %q not passed: %v", retention, args)
			}
		}
	})
}
