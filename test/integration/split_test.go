package integration

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestAConfigLargerThanOneSecretIsSplitIntoPiecesAndShrinksBack(t *testing.T) {
	ns := newNamespace(t)
	// 300 monitors, each carrying 8 KiB of hex (4 KiB of entropy) of relabeling: well
	// over what one Secret holds once gzipped.
	const monitors = 300
	var wg sync.WaitGroup
	errs := make(chan error, monitors)
	sem := make(chan struct{}, 16)
	for i := range monitors {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			buf := make([]byte, 4096)
			_, _ = rand.Read(buf)
			sm := newServiceMonitor(ns, fmt.Sprintf("big-%03d", i), withRelabeling(monitoringv1.RelabelConfig{
				TargetLabel: "blob", Replacement: ptr.To(hex.EncodeToString(buf)), Action: "replace"}))
			errs <- k8s.Create(testCtx, sm)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	mustCreate(t, newPrometheus(ns, "big"))

	piece := func(i int) client.ObjectKey {
		return client.ObjectKey{Namespace: ns, Name: fmt.Sprintf("prometheus-big-scrape-%d", i)}
	}
	var pieces []corev1.Secret
	jobs := 0
	eventually(t, "the main config loads all jobs from pieces", func() (bool, error) {
		cfg, err := configOf(ns, "big")
		if err != nil || !strings.Contains(cfg, "scrape_config_files:") || strings.Contains(cfg, "- job_name:") {
			return false, nil
		}
		pieces, jobs = nil, 0
		for i := 0; ; i++ {
			var s corev1.Secret
			if err := k8s.Get(testCtx, piece(i), &s); err != nil {
				break
			}
			doc, err := gunzip(s.Data["scrape.yaml.gz"])
			if err != nil {
				return false, err
			}
			pieces = append(pieces, s)
			jobs += len(jobsIn(doc))
		}
		return jobs == monitors, nil
	})
	if len(pieces) < 2 {
		t.Fatalf("found %d piece Secrets, want at least 2", len(pieces))
	}
	for _, s := range pieces {
		size := 0
		for _, v := range s.Data {
			size += len(v)
		}
		if size > 1<<20 {
			t.Errorf("Secret %s holds %d bytes", s.Name, size)
		}
	}
	t.Logf("%d monitors → %d piece Secrets", monitors, len(pieces))

	// Most monitors go away: the config fits again and the pieces are pruned.
	for i := 10; i < monitors; i++ {
		if err := k8s.Delete(testCtx, &monitoringv1.ServiceMonitor{ObjectMeta: metaName(ns, fmt.Sprintf("big-%03d", i))}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "the config is one Secret again and the pieces are deleted", func() (bool, error) {
		cfg, err := configOf(ns, "big")
		if err != nil || strings.Contains(cfg, "scrape_config_files:") || len(jobsIn(cfg)) != 10 {
			return false, nil
		}
		return apierrors.IsNotFound(k8s.Get(testCtx, piece(0), &corev1.Secret{})), nil
	})
}
