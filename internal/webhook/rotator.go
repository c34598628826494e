package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// retryInterval bounds the wait after a failed check; the regular interval
// (an hour) is too long to wait for a transient apiserver error.
const retryInterval = 10 * time.Second

// rotator keeps the certificate Secret, the files in CertDir and the
// ValidatingWebhookConfiguration current. It runs on every replica (each
// serves the webhook from its own files); the replicas agree through the
// Secret, written with optimistic concurrency.
type rotator struct {
	client client.Client // writes
	reader client.Reader // live reads: Secrets are not cached
	opts   Options
	now    func() time.Time
	log    logr.Logger
}

// NeedLeaderElection is false: every replica serves the webhook.
func (r *rotator) NeedLeaderElection() bool { return false }

// Start checks at once, then every RotationCheckInterval (sooner after a
// failure), until ctx ends.
func (r *rotator) Start(ctx context.Context) error {
	for {
		wait := r.opts.RotationCheckInterval
		if err := r.check(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			r.log.Error(err, "Check the webhook certificate and configuration")
			wait = min(wait, retryInterval)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

// check is one pass: certificates (when managed), then the configuration.
func (r *rotator) check(ctx context.Context) error {
	var caBundle []byte
	if r.opts.ManageCerts {
		var err error
		if caBundle, err = r.syncCertificates(ctx); err != nil {
			return err
		}
	}
	return r.applyConfiguration(ctx, caBundle)
}

// applyConfiguration applies the configuration; the apiserver writes nothing
// when it is unchanged. An install ships it (so that removing the install
// removes it): then the operator applies only the CA bundle, and the install's
// next apply of a changed field (a timeout, a rule) meets no conflict with
// it. Out of the cluster (URL), or when nothing shipped it, the operator
// applies the whole configuration. The conversion is applied (or released)
// even when the configuration fails: one does not wait on the other.
func (r *rotator) applyConfiguration(ctx context.Context, caBundle []byte) error {
	var conversion error
	if !r.opts.Conversion {
		conversion = ReleaseConversion(ctx, r.client, r.reader, r.opts)
	} else {
		conversion = r.applyConversion(ctx, caBundle)
	}
	return errors.Join(r.applyValidating(ctx, caBundle), conversion)
}

// applyValidating applies the ValidatingWebhookConfiguration (see applyConfiguration).
func (r *rotator) applyValidating(ctx context.Context, caBundle []byte) error {
	cfg := desiredConfiguration(r.opts, caBundle)
	var shipped admissionregistrationv1.ValidatingWebhookConfiguration
	err := r.reader.Get(ctx, client.ObjectKey{Name: r.opts.ConfigurationName}, &shipped)
	switch {
	case err != nil && !apierrors.IsNotFound(err):
		return fmt.Errorf("read ValidatingWebhookConfiguration %s: %w", r.opts.ConfigurationName, err)
	case err != nil:
		// Nothing shipped it: the whole configuration.
	case r.opts.URL != "":
		// An operator run outside the cluster serves at a URL. A shipped
		// configuration naming the in-cluster Service is pointed at it first:
		// an apply adds the URL beside another owner's Service, which the
		// apiserver refuses (a client config names exactly one).
		if err := r.pointAtURL(ctx, &shipped); err != nil {
			return err
		}
	case caBundle == nil:
		cfg = nil // cert-manager's cainjector fills the bundle
	default:
		cfg = caBundleOnly(r.opts, &shipped, caBundle)
	}
	if cfg == nil {
		return nil
	}
	if err := r.client.Apply(ctx, cfg, client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("apply ValidatingWebhookConfiguration %s: %w", r.opts.ConfigurationName, err)
	}
	return nil
}

// pointAtURL rewrites the Service references of a shipped configuration to the
// operator's URL (kept: every other field and the CA bundle).
func (r *rotator) pointAtURL(ctx context.Context, shipped *admissionregistrationv1.ValidatingWebhookConfiguration) error {
	paths := map[string]string{}
	for _, k := range r.opts.servedKinds() {
		paths[k.webhookName()] = k.path()
	}
	base := shipped.DeepCopy()
	changed := false
	for i := range shipped.Webhooks {
		w := &shipped.Webhooks[i]
		path, ours := paths[w.Name]
		if w.ClientConfig.Service == nil || !ours {
			continue
		}
		url := strings.TrimSuffix(r.opts.URL, "/") + path
		w.ClientConfig.Service, w.ClientConfig.URL = nil, &url
		changed = true
	}
	if !changed {
		return nil
	}
	// A merge patch: the webhooks list is replaced whole, Service references gone.
	if err := r.client.Patch(ctx, shipped, client.MergeFrom(base)); err != nil {
		return fmt.Errorf("point ValidatingWebhookConfiguration %s at %s: %w", r.opts.ConfigurationName, r.opts.URL, err)
	}
	return nil
}

// syncCertificates makes the Secret hold a CA and a serving certificate
// that are not due for renewal and cover the configured names, writes them
// to CertDir (where the webhook server's certificate watcher picks them
// up) and returns the CA bundle.
func (r *rotator) syncCertificates(ctx context.Context) ([]byte, error) {
	key := client.ObjectKey{Namespace: r.opts.Namespace, Name: r.opts.SecretName}
	dnsNames, ips := r.opts.certNames()
	for attempt := 0; ; attempt++ {
		var secret corev1.Secret
		err := r.reader.Get(ctx, key, &secret)
		exists := err == nil
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("read Secret %s: %w", key, err)
		}
		var current *keyMaterial
		if exists {
			if current, err = parseKeyMaterial(secret.Data); err != nil {
				r.log.Info("Replacing the webhook certificate Secret", "secret", klog.KRef(key.Namespace, key.Name), "problem", err.Error())
			}
		}
		next, reason, err := planCertificates(current, certRequest{
			now: r.now(), dnsNames: dnsNames, ips: ips,
			validity: r.opts.CertValidity, caValidity: r.opts.CAValidity,
		})
		if err != nil {
			return nil, err
		}
		if reason != "" {
			err := r.writeSecret(ctx, &secret, exists, next)
			if (apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err)) && attempt < 5 {
				// Another replica wrote first: start over from its result.
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("write Secret %s: %w", key, err)
			}
			r.log.Info("Issued the webhook certificate", "secret", klog.KRef(key.Namespace, key.Name), "reason", reason,
				"notAfter", next.leaf.NotAfter, "caNotAfter", next.ca.NotAfter)
		}
		if err := writeCertFiles(r.opts.CertDir, next); err != nil {
			return nil, err
		}
		return next.bundlePEM(), nil
	}
}

func (r *rotator) writeSecret(ctx context.Context, secret *corev1.Secret, exists bool, m *keyMaterial) error {
	data, err := m.data()
	if err != nil {
		return err
	}
	if !exists {
		secret = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: r.opts.Namespace,
				Name:      r.opts.SecretName,
				Labels: map[string]string{
					"app.kubernetes.io/name":       "lookout",
					"app.kubernetes.io/component":  "webhook",
					"app.kubernetes.io/managed-by": "lookout",
				},
			},
			Type: corev1.SecretTypeTLS,
			Data: data,
		}
		return r.client.Create(ctx, secret, client.FieldOwner(FieldOwner))
	}
	// Update carries the resourceVersion read above: a concurrent writer
	// makes this fail with a conflict instead of being overwritten.
	secret.Data = data
	return r.client.Update(ctx, secret, client.FieldOwner(FieldOwner))
}

// writeCertFiles writes tls.crt, tls.key and ca.crt when they differ from
// what is on disk, each by rename so that a reader never sees half a file.
// Between the two renames the watcher may see a key that does not match the
// certificate; it refuses that pair and keeps serving the previous one until
// the second file follows.
func writeCertFiles(dir string, m *keyMaterial) error {
	data, err := m.data()
	if err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		mode os.FileMode
	}{{keyTLSKey, 0o600}, {keyTLSCert, 0o644}, {keyCACert, 0o644}} {
		if err := writeFileIfChanged(filepath.Join(dir, f.name), data[f.name], f.mode); err != nil {
			return err
		}
	}
	return nil
}

func writeFileIfChanged(path string, data []byte, mode os.FileMode) error {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return nil
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
