package postgres_test

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	postgresv1beta1 "github.com/lookout-operator/lookout/api/postgres/v1beta1"
	pg "github.com/lookout-operator/lookout/internal/render/postgres"
	"github.com/lookout-operator/lookout/internal/render/workload"
)

const (
	image1518 = "lookout-postgres:15.18"
	image1520 = "lookout-postgres:15.20"
)

// upgradeCluster is a rendered 3-instance cluster on 15.18 whose spec now
// names 15.20: its StatefulSets as they exist, and its instances (pods) in
// name order.
func upgradeCluster(t *testing.T) (*postgresv1beta1.PostgresCluster, []*appsv1.StatefulSet, []string) {
	t.Helper()
	c := hippo(func(c *postgresv1beta1.PostgresCluster) { c.Spec.Image = image1518 })
	d := render(t, inputs(t, c, 1))
	var stss []*appsv1.StatefulSet
	var pods []string
	for _, o := range d.Objects {
		if sts, ok := o.(*appsv1.StatefulSet); ok {
			stss = append(stss, sts)
			pods = append(pods, pg.PodName(sts.Name))
		}
	}
	slices.Sort(pods)
	if len(stss) != 3 {
		t.Fatalf("rendered %d StatefulSets, want 3", len(stss))
	}
	c.Spec.Image = image1520
	c.Generation++
	return c, stss, pods
}

// observed is the status of a whole cluster whose primary is primary, with
// each pod's image as given.
func observed(primary string, images map[string]string) postgresv1beta1.PostgresClusterStatus {
	s := postgresv1beta1.PostgresClusterStatus{PostgresVersion: 15, Ready: "3/3", Primary: primary}
	names := make([]string, 0, len(images))
	for n := range images {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		s.InstanceVersions = append(s.InstanceVersions, postgresv1beta1.InstanceVersion{Name: n, Image: images[n],
			Version: strings.TrimPrefix(images[n], "lookout-postgres:")})
		if n != primary {
			s.Replicas = append(s.Replicas, postgresv1beta1.ReplicaStatus{Name: n, State: "streaming"})
		}
	}
	return s
}

func imagesOf(d *pg.Desired) map[string]string {
	out := map[string]string{}
	for _, o := range d.Objects {
		if sts, ok := o.(*appsv1.StatefulSet); ok {
			out[pg.PodName(sts.Name)] = sts.Spec.Template.Spec.Containers[0].Image
		}
	}
	return out
}

// withImages is stss with each instance's template on the image given by
// pod name.
func withImages(stss []*appsv1.StatefulSet, images map[string]string) []*appsv1.StatefulSet {
	out := make([]*appsv1.StatefulSet, len(stss))
	for i, sts := range stss {
		out[i] = sts.DeepCopy()
		out[i].Spec.Template.Spec.Containers[0].Image = images[pg.PodName(sts.Name)]
	}
	return out
}

// A change of spec.image within the major is rolled out one step per
// render, from the last observed status: the replicas in name order, each
// once the one before runs the new image and streams again; then a
// switchover of the primary; then the old primary, now a replica; nothing
// while an instance is between images or the cluster is not whole.
func TestMinorUpgradeSteps(t *testing.T) {
	c, stss, p := upgradeCluster(t)
	a, b, x := p[0], p[1], p[2]
	all := func(img string) map[string]string { return map[string]string{a: img, b: img, x: img} }
	for _, tc := range []struct {
		name       string
		sts, pods  map[string]string // the StatefulSets' and the pods' images
		primary    string
		ready      string
		notStream  string
		want       map[string]string // the StatefulSets' images rendered
		switchover bool
	}{
		{name: "every instance on 15.18, a the primary: the first replica moves", sts: all(image1518), pods: all(image1518), primary: a,
			want: map[string]string{a: image1518, b: image1520, x: image1518}},
		{name: "the first replica's pod not replaced yet: nothing moves", sts: map[string]string{a: image1518, b: image1520, x: image1518}, pods: all(image1518), primary: a,
			want: map[string]string{a: image1518, b: image1520, x: image1518}},
		{name: "the first replica on 15.20 but not ready: nothing moves", sts: map[string]string{a: image1518, b: image1520, x: image1518},
			pods: map[string]string{a: image1518, b: image1520, x: image1518}, primary: a, ready: "2/3",
			want: map[string]string{a: image1518, b: image1520, x: image1518}},
		{name: "the first replica on 15.20 and not streaming yet: nothing moves", sts: map[string]string{a: image1518, b: image1520, x: image1518},
			pods: map[string]string{a: image1518, b: image1520, x: image1518}, primary: a, notStream: b,
			want: map[string]string{a: image1518, b: image1520, x: image1518}},
		{name: "the first replica streams on 15.20: the second moves", sts: map[string]string{a: image1518, b: image1520, x: image1518},
			pods: map[string]string{a: image1518, b: image1520, x: image1518}, primary: a,
			want: map[string]string{a: image1518, b: image1520, x: image1520}},
		{name: "every replica on 15.20: the primary is switched over", sts: map[string]string{a: image1518, b: image1520, x: image1520},
			pods: map[string]string{a: image1518, b: image1520, x: image1520}, primary: a,
			want: map[string]string{a: image1518, b: image1520, x: image1520}, switchover: true},
		{name: "switched over: the old primary, now a replica, moves", sts: map[string]string{a: image1518, b: image1520, x: image1520},
			pods: map[string]string{a: image1518, b: image1520, x: image1520}, primary: b,
			want: all(image1520)},
		{name: "no primary: nothing moves", sts: all(image1518), pods: all(image1518), want: all(image1518)},
		{name: "every instance on 15.20: done", sts: all(image1520), pods: all(image1520), primary: b, want: all(image1520)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := c.DeepCopy()
			c.Status = observed(tc.primary, tc.pods)
			if tc.ready != "" {
				c.Status.Ready = tc.ready
			}
			for i := range c.Status.Replicas {
				if c.Status.Replicas[i].Name == tc.notStream {
					c.Status.Replicas[i].State = "catchup"
				}
			}
			in := inputs(t, c, 1)
			in.StatefulSets = withImages(stss, tc.sts)
			d := render(t, in)
			if got := imagesOf(d); !maps.Equal(got, tc.want) {
				t.Errorf("StatefulSets' images:\n got %v\nwant %v", got, tc.want)
			}
			sw := d.Config.Switchover
			if (sw != nil) != tc.switchover {
				t.Fatalf("switchover %+v, want one: %v", sw, tc.switchover)
			}
			if sw != nil && (!strings.HasPrefix(sw.Trigger, pg.UpgradeTriggerPrefix) || !strings.HasSuffix(sw.Trigger, "/"+tc.primary) ||
				sw.Type != postgresv1beta1.SwitchoverTypeSwitchover) {
				t.Errorf("switchover %+v", sw)
			}
		})
	}
}

// A single instance has no standby to hand over to: it moves in place.
func TestMinorUpgradeOfOneInstanceIsInPlace(t *testing.T) {
	c := hippo(func(c *postgresv1beta1.PostgresCluster) {
		c.Spec.Image = image1518
		c.Spec.InstanceSets[0].Replicas = new(int32)
		*c.Spec.InstanceSets[0].Replicas = 1
	})
	d := render(t, inputs(t, c, 1))
	var stss []*appsv1.StatefulSet
	for _, o := range d.Objects {
		if sts, ok := o.(*appsv1.StatefulSet); ok {
			stss = append(stss, sts)
		}
	}
	pod := pg.PodName(stss[0].Name)
	c.Spec.Image = image1520
	c.Status = observed(pod, map[string]string{pod: image1518})
	c.Status.Ready = "1/1"
	in := inputs(t, c, 1)
	in.StatefulSets = stss
	if got := imagesOf(render(t, in)); got[pod] != image1520 {
		t.Errorf("the one instance's image: %s, want %s", got[pod], image1520)
	}
}

// While instances change images, a rolling restart steps aside (the new
// pods start with every parameter), and a switchover the user asked for
// comes first: no instance moves meanwhile.
func TestMinorUpgradeBeforeRestartAfterUserSwitchover(t *testing.T) {
	c, stss, p := upgradeCluster(t)
	c.Status = observed(p[0], map[string]string{p[0]: image1518, p[1]: image1518, p[2]: image1518})
	c.Status.AppliedGeneration = c.Generation
	c.Status.PendingRestart = []postgresv1beta1.InstancePendingRestart{{Name: p[1], Parameters: []string{"shared_buffers"}}}
	in := inputs(t, c, 1)
	in.StatefulSets = stss
	d := render(t, in)
	if d.Config.Restart != nil {
		t.Errorf("a restart %+v during a minor upgrade", d.Config.Restart)
	}
	if imagesOf(d)[p[1]] != image1520 {
		t.Errorf("the first replica did not move: %v", imagesOf(d))
	}

	c.Spec.Patroni = &postgresv1beta1.PatroniSpec{Switchover: &postgresv1beta1.PatroniSwitchover{Enabled: true}}
	c.Annotations = map[string]string{"postgres-operator.crunchydata.com/trigger-switchover": "mine"}
	d = render(t, in)
	if d.Config.Switchover == nil || d.Config.Switchover.Trigger != "mine" {
		t.Errorf("switchover %+v, want the user's", d.Config.Switchover)
	}
	if got := imagesOf(d); got[p[1]] != image1518 {
		t.Errorf("an instance moved during the user's switchover: %v", got)
	}
}

// An image whose tag names an older minor than an instance runs is
// refused (unless the cluster allows it), as is one of another major; a
// tag without a release is rolled out on what the instances report.
func TestMinorUpgradeRefusesADowngradeAndAnotherMajor(t *testing.T) {
	c, stss, p := upgradeCluster(t)
	c.Status = observed(p[0], map[string]string{p[0]: image1518, p[1]: image1520, p[2]: image1520})
	for _, tc := range []struct {
		name, image, allow, reason string
	}{
		{name: "back to 15.18 while two instances run 15.20", image: image1518, reason: postgresv1beta1.ReasonMinorDowngrade},
		{name: "back to 15.18, allowed by the annotation", image: image1518, allow: "true"},
		{name: "PGO's tag of an older minor", image: "registry.developers.crunchydata.com/crunchydata/crunchy-postgres:ubi8-15.4-0", reason: postgresv1beta1.ReasonMinorDowngrade},
		{name: "a tag of PostgreSQL 17", image: "lookout-postgres:17.2", reason: postgresv1beta1.ReasonImageMajor},
		{name: "a tag without a release", image: "ghcr.io/lookout-operator/lookout-postgres:v0.4.0-3-gabcdef"},
		{name: "a newer minor", image: "lookout-postgres:15.21"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := c.DeepCopy()
			c.Spec.Image = tc.image
			if tc.allow != "" {
				c.Annotations = map[string]string{postgresv1beta1.AnnotationAllowMinorDowngrade: tc.allow}
			}
			in := inputs(t, c, 1)
			in.StatefulSets = stss
			_, err := pg.Render(in)
			var se *workload.SpecError
			switch {
			case tc.reason == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.reason != "" && (!errors.As(err, &se) || se.Reason != tc.reason || se.Field != "spec.image"):
				t.Fatalf("error %v, want a SpecError %s on spec.image", err, tc.reason)
			case tc.reason != "":
				t.Logf("refused: %s", se.Message)
			}
		})
	}
}

// The MinorUpgrade condition: absent until an instance runs another image,
// True while one does (or the cluster is not whole again after), False
// with the time it took once every instance runs the spec's image.
func TestMinorUpgradeCondition(t *testing.T) {
	start := time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
	c := hippo(func(c *postgresv1beta1.PostgresCluster) { c.Spec.Image = image1520 })
	c.Status = observed("a-0", map[string]string{"a-0": image1520, "b-0": image1520, "c-0": image1520})
	if cond := pg.MinorUpgradeCondition(c, image1520, start); cond != nil {
		t.Errorf("never upgraded: %+v, want none", cond)
	}
	c.Status = observed("a-0", map[string]string{"a-0": image1518, "b-0": image1520, "c-0": image1518})
	cond := pg.MinorUpgradeCondition(c, image1520, start)
	if cond == nil || cond.Status != metav1.ConditionTrue || cond.Reason != postgresv1beta1.ReasonUpgrading ||
		!strings.Contains(cond.Message, "1 of 3") || !strings.Contains(cond.Message, "a-0 15.18 (primary)") {
		t.Fatalf("upgrading: %+v", cond)
	}
	cond.LastTransitionTime = metav1.NewTime(start)
	c.Status.Conditions = []metav1.Condition{*cond}
	c.Status.InstanceVersions = observed("b-0", map[string]string{"a-0": image1520, "b-0": image1520, "c-0": image1520}).InstanceVersions
	c.Status.Ready = "2/3"
	if cond := pg.MinorUpgradeCondition(c, image1520, start.Add(time.Minute)); cond == nil || cond.Status != metav1.ConditionTrue {
		t.Errorf("every pod on the image but not whole: %+v, want True", cond)
	}
	c.Status.Ready = "3/3"
	cond = pg.MinorUpgradeCondition(c, image1520, start.Add(83*time.Second))
	if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != postgresv1beta1.ReasonUpgraded || !strings.Contains(cond.Message, "took 1m23s") {
		t.Errorf("done: %+v", cond)
	}
}
