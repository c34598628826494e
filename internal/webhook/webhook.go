// Package webhook is Lookout's validating admission webhook for the
// monitoring.coreos.com kinds people write by hand: PrometheusRule,
// ServiceMonitor, PodMonitor, Probe, ScrapeConfig and AlertmanagerConfig.
//
// The validators (ValidatePrometheusRule, ValidateServiceMonitor, ...) are
// pure functions that the controller and the CLI can call too. The webhook is
// a fast first line of defence that tells kubectl users at once what is wrong;
// it fails open (failurePolicy Ignore, 5s timeout) because the controller
// validates every object again and reports a rejection on its status, so a
// webhook that is down or slow never blocks the cluster.
//
// The operator manages its own serving certificate: a CA and a serving
// certificate in a Secret shared by every replica, renewed when a third of
// their lifetime remains, and the ValidatingWebhookConfiguration, applied
// with the CA bundle. With cert-manager, ManageCerts is off and the mounted
// certificate is served as it is.
package webhook

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	pgrender "github.com/lookout-operator/lookout/internal/render/postgres"
)

// Defaults of Options.
const (
	DefaultPort                  = 9443
	DefaultSecretName            = "lookout-webhook-tls"
	DefaultServiceName           = "lookout-webhook"
	DefaultServicePort           = 443
	DefaultConfigurationName     = "lookout"
	DefaultTimeoutSeconds        = 5
	DefaultRotationCheckInterval = time.Hour
	DefaultCertValidity          = 365 * 24 * time.Hour
	DefaultCAValidity            = 10 * 365 * 24 * time.Hour
)

// FieldOwner is the server-side-apply field manager of the
// ValidatingWebhookConfiguration; the same owner as every other object
// Lookout applies.
const FieldOwner = "lookout"

// Options configure the webhook. Port, Host and CertDir must be the ones the
// manager's webhook server was created with; ServerOptions returns them.
type Options struct {
	// Host is the address the webhook server listens on; empty: all.
	Host string
	// Port of the webhook server (default 9443).
	Port int
	// CertDir holds tls.crt and tls.key. With ManageCerts the operator
	// writes them there; without, they must be there (mounted).
	CertDir string
	// ManageCerts: create, store (Secret SecretName) and renew the CA and
	// serving certificate, and put the CA bundle into the
	// ValidatingWebhookConfiguration. Off when cert-manager provides them.
	ManageCerts bool

	// Namespace of the operator: home of the Secret and the Service.
	Namespace string
	// SecretName of the certificate Secret (default lookout-webhook-tls).
	SecretName string
	// ServiceName and ServicePort of the Service in front of the operator
	// pods that the apiserver calls (default lookout-webhook:443).
	ServiceName string
	ServicePort int32
	// URL, when set, makes the apiserver call https://<host:port> of the URL
	// instead of the Service: for an operator running outside the cluster
	// (local runs, tests). Its host is added to the certificate.
	URL string
	// ExtraSANs are more DNS names or IP addresses for the certificate.
	ExtraSANs []string

	// ConfigurationName names the ValidatingWebhookConfiguration (default lookout).
	ConfigurationName string
	// FailurePolicy of every webhook (default Ignore, see the package doc).
	FailurePolicy admissionregistrationv1.FailurePolicyType
	// TimeoutSeconds the apiserver waits for an answer (default 5).
	TimeoutSeconds int32
	// Conversion points the AlertmanagerConfig CRD's spec.conversion at
	// this webhook. Off, a conversion that points at it (left by an earlier
	// run) is set back to None: a CRD whose conversion webhook is gone fails
	// every read of its objects in another version, and every deletion of a
	// namespace holding one.
	Conversion bool
	// CAInjectFrom, when set without ManageCerts, annotates the
	// configuration for cert-manager's cainjector ("<namespace>/<certificate>").
	CAInjectFrom string

	// RotationCheckInterval is how often every replica re-reads the Secret,
	// renews what is due and re-applies the configuration (default 1h).
	RotationCheckInterval time.Duration
	// CertValidity and CAValidity are the lifetimes of newly issued
	// certificates (default one year and ten years).
	CertValidity time.Duration
	CAValidity   time.Duration

	// Postgres, when set, validates PostgresClusters too, against the
	// PostgreSQL the operator can run (the operator sets it when it runs the
	// postgrescluster controller).
	Postgres *pgrender.Installation
	// NoMonitoring: the operator runs no monitoring controller, and the
	// webhook validates no monitoring.coreos.com kind (they may be another
	// operator's).
	NoMonitoring bool
}

// servedKinds are the kinds validated: the monitoring ones unless
// NoMonitoring, and PostgresCluster with Postgres set.
func (o Options) servedKinds() []kindSpec {
	var out []kindSpec
	if !o.NoMonitoring {
		out = slices.Clone(kinds)
	}
	if o.Postgres != nil {
		out = append(out, postgresKind)
	}
	return out
}

// ServerOptions are the options to create the manager's webhook server with:
// ctrl.Options{WebhookServer: crwebhook.NewServer(opts.ServerOptions())}.
func (o Options) ServerOptions() crwebhook.Options {
	o.setDefaults()
	return crwebhook.Options{Host: o.Host, Port: o.Port, CertDir: o.CertDir}
}

func (o *Options) setDefaults() {
	if o.Port == 0 {
		o.Port = DefaultPort
	}
	if o.SecretName == "" {
		o.SecretName = DefaultSecretName
	}
	if o.ServiceName == "" {
		o.ServiceName = DefaultServiceName
	}
	if o.ServicePort == 0 {
		o.ServicePort = DefaultServicePort
	}
	if o.ConfigurationName == "" {
		o.ConfigurationName = DefaultConfigurationName
	}
	if o.FailurePolicy == "" {
		o.FailurePolicy = admissionregistrationv1.Ignore
	}
	if o.TimeoutSeconds == 0 {
		o.TimeoutSeconds = DefaultTimeoutSeconds
	}
	if o.RotationCheckInterval <= 0 {
		o.RotationCheckInterval = DefaultRotationCheckInterval
	}
	if o.CertValidity <= 0 {
		o.CertValidity = DefaultCertValidity
	}
	if o.CAValidity <= 0 {
		o.CAValidity = DefaultCAValidity
	}
}

func (o *Options) validate() error {
	var errs []error
	if o.CertDir == "" {
		errs = append(errs, errors.New("CertDir is required"))
	}
	if o.URL == "" && o.Namespace == "" {
		errs = append(errs, errors.New("Namespace is required to name the Service the apiserver calls (or set URL)"))
	}
	if o.ManageCerts && o.Namespace == "" {
		errs = append(errs, errors.New("Namespace is required to store the certificate Secret"))
	}
	if o.URL != "" {
		u, err := url.Parse(o.URL)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("URL: %w", err))
		case u.Scheme != "https" || u.Host == "":
			errs = append(errs, fmt.Errorf("URL %q: want https://<host>[:<port>]", o.URL))
		}
	}
	if o.FailurePolicy != admissionregistrationv1.Ignore && o.FailurePolicy != admissionregistrationv1.Fail {
		errs = append(errs, fmt.Errorf("FailurePolicy %q: want Ignore or Fail", o.FailurePolicy))
	}
	if o.TimeoutSeconds < 1 || o.TimeoutSeconds > 30 {
		errs = append(errs, fmt.Errorf("TimeoutSeconds %d: the apiserver accepts 1 to 30", o.TimeoutSeconds))
	}
	return errors.Join(errs...)
}

// certNames are the names the serving certificate must cover: those the
// apiserver uses for the Service, the URL's host and the extra names.
func (o *Options) certNames() (dnsNames []string, ips []net.IP) {
	add := func(s string) {
		if s == "" {
			return
		}
		if ip := net.ParseIP(s); ip != nil {
			if !slices.ContainsFunc(ips, ip.Equal) {
				ips = append(ips, ip)
			}
			return
		}
		if !slices.Contains(dnsNames, s) {
			dnsNames = append(dnsNames, s)
		}
	}
	if o.Namespace != "" {
		add(o.ServiceName + "." + o.Namespace + ".svc")
		add(o.ServiceName + "." + o.Namespace + ".svc.cluster.local")
	}
	if o.URL != "" {
		if u, err := url.Parse(o.URL); err == nil {
			add(u.Hostname())
		}
	}
	for _, s := range o.ExtraSANs {
		add(strings.TrimSpace(s))
	}
	return dnsNames, ips
}

// Setup registers one validating handler per kind on the manager's webhook
// server and, with ManageCerts, makes sure the serving certificate is in
// CertDir before returning: the webhook server loads it when it starts,
// before any runnable of ours would run. A runnable on every replica then
// renews the certificate and applies the ValidatingWebhookConfiguration.
func Setup(mgr ctrl.Manager, opts Options) error {
	opts.setDefaults()
	if err := opts.validate(); err != nil {
		return fmt.Errorf("webhook options: %w", err)
	}
	server := mgr.GetWebhookServer()
	if ds, ok := server.(*crwebhook.DefaultServer); ok {
		if err := checkServer(ds.Options, opts); err != nil {
			return err
		}
	}
	log := mgr.GetLogger().WithName("webhook")

	r := &rotator{
		client: mgr.GetClient(),
		reader: mgr.GetAPIReader(),
		opts:   opts,
		now:    time.Now,
		log:    log,
	}
	if opts.ManageCerts {
		if err := os.MkdirAll(opts.CertDir, 0o700); err != nil {
			return fmt.Errorf("create webhook certificate directory: %w", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := r.syncCertificates(ctx); err != nil {
			return fmt.Errorf("set up the webhook certificate: %w", err)
		}
	} else if err := loadServingPair(filepath.Join(opts.CertDir, keyTLSCert), filepath.Join(opts.CertDir, keyTLSKey)); err != nil {
		return fmt.Errorf("certificates are not managed by Lookout, but %s holds no usable tls.crt and tls.key: %w", opts.CertDir, err)
	}

	exportCertificateExpiry(opts.CertDir)

	convert, err := conversionHandler(mgr.GetScheme())
	if err != nil {
		return err
	}
	server.Register(ConversionPath, convert)
	for _, k := range opts.servedKinds() {
		server.Register(k.path(), &admission.Webhook{
			Handler: &handler{postgres: opts.Postgres},
			LogConstructor: func(_ logr.Logger, req *admission.Request) logr.Logger {
				l := log.WithValues("webhook", k.webhookName())
				if req != nil {
					l = l.WithValues("object", klog.KRef(req.Namespace, req.Name), "operation", req.Operation)
				}
				return l
			},
		})
	}
	return mgr.Add(r)
}

// checkServer refuses a webhook server that listens elsewhere or reads
// another directory than the options say: the certificate would be written
// where nobody reads it.
func checkServer(so crwebhook.Options, o Options) error {
	port := so.Port
	if port == 0 {
		port = crwebhook.DefaultPort
	}
	var diffs []string
	if port != o.Port {
		diffs = append(diffs, fmt.Sprintf("port %d, not %d", port, o.Port))
	}
	if so.CertDir != "" && filepath.Clean(so.CertDir) != filepath.Clean(o.CertDir) {
		diffs = append(diffs, fmt.Sprintf("certificate directory %s, not %s", so.CertDir, o.CertDir))
	}
	if so.CertDir == "" {
		diffs = append(diffs, "the default certificate directory")
	}
	if len(diffs) > 0 {
		return fmt.Errorf("the manager's webhook server uses %s; create it with webhook.NewServer(opts.ServerOptions())", strings.Join(diffs, " and "))
	}
	return nil
}

// kindSpec is one validated kind: one webhook, one path.
type kindSpec struct {
	kind     string
	resource string
	versions []string
	// group is the kind's API group; "": monitoringGroup.
	group string
}

func (k kindSpec) apiGroup() string {
	if k.group == "" {
		return monitoringGroup
	}
	return k.group
}

const monitoringGroup = "monitoring.coreos.com"

var kinds = []kindSpec{
	{kind: "PrometheusRule", resource: "prometheusrules", versions: []string{"v1"}},
	{kind: "ServiceMonitor", resource: "servicemonitors", versions: []string{"v1"}},
	{kind: "PodMonitor", resource: "podmonitors", versions: []string{"v1"}},
	{kind: "Probe", resource: "probes", versions: []string{"v1"}},
	{kind: "ScrapeConfig", resource: "scrapeconfigs", versions: []string{"v1alpha1"}},
	// Both served versions go to one webhook: with matchPolicy Equivalent,
	// two webhooks of one version each would each receive every request.
	{kind: "AlertmanagerConfig", resource: "alertmanagerconfigs", versions: []string{"v1alpha1", "v1beta1"}},
}

// path is /validate-monitoring-coreos-com-<version>-<kind>, without the
// version for a kind whose webhook takes several.
func (k kindSpec) path() string {
	p := "/validate-" + strings.ReplaceAll(k.apiGroup(), ".", "-")
	if len(k.versions) == 1 {
		p += "-" + k.versions[0]
	}
	return p + "-" + strings.ToLower(k.kind)
}

func (k kindSpec) webhookName() string {
	return strings.ToLower(k.kind) + ".lookout.dev"
}
