package integration

import (
	"bytes"
	"compress/gzip"
	"io"
	"log/slog"
	"os"

	"context"
	"fmt"
	"github.com/go-logr/logr"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

type testContext = context.Context

var nsCounter atomic.Int64

// newNamespace creates a namespace for one test; it is deleted afterwards.
func newNamespace(t *testing.T) string {
	t.Helper()
	name := fmt.Sprintf("t%d-%s", nsCounter.Add(1), strings.ToLower(sanitize(t.Name())))
	if len(name) > 63 {
		name = strings.TrimRight(name[:63], "-")
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := k8s.Create(testCtx, ns); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), ns) })
	return name
}

func sanitize(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	return b.String()
}

// testLogger logs warnings and errors; LOOKOUT_TEST_LOG=debug shows everything.
func testLogger() logr.Logger {
	level := slog.LevelWarn
	if os.Getenv("LOOKOUT_TEST_LOG") == "debug" {
		level = slog.Level(-10)
	}
	return logr.FromSlogHandler(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

// update re-reads obj, applies mutate and updates it, retrying on conflicts
// (the operator writes status concurrently).
func update[T client.Object](t *testing.T, obj T, mutate func(T)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := k8s.Get(testCtx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		mutate(obj)
		return k8s.Update(testCtx, obj)
	})
	if err != nil {
		t.Fatalf("update %s: %v", obj.GetName(), err)
	}
}

func metaName(ns, name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: name} }

func gunzip(b []byte) (string, error) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return "", err
	}
	out, err := io.ReadAll(zr)
	return string(out), err
}
