package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientfeatures "k8s.io/client-go/features"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	postgresv1beta1 "github.com/lookout-operator/lookout/api/postgres/v1beta1"
	"github.com/lookout-operator/lookout/internal/controller"
	"github.com/lookout-operator/lookout/internal/crds"
	"github.com/lookout-operator/lookout/internal/gather"
	"github.com/lookout-operator/lookout/internal/install"
	"github.com/lookout-operator/lookout/internal/pgcontract"
	pgrender "github.com/lookout-operator/lookout/internal/render/postgres"
	"github.com/lookout-operator/lookout/internal/scheme"
	"github.com/lookout-operator/lookout/internal/version"
	lookoutwebhook "github.com/lookout-operator/lookout/internal/webhook"
)

type operatorOptions struct {
	namespaces              []string
	metricsAddr             string
	probeAddr               string
	pprofAddr               string
	kubeAPIQPS              float32
	kubeAPIBurst            int
	leaderElect             bool
	leaderElectionNamespace string
	leaseDuration           time.Duration
	renewDeadline           time.Duration
	retryPeriod             time.Duration
	logFormat               string
	logLevel                string
	workers                 int
	reloaderImage           string
	kubeconfig              string
	webhook                 bool
	wh                      lookoutwebhook.Options
	whFailurePolicy         string
	watchList               bool
	watchListSet            bool // --watch-list was given
	controllers             []string
	postgres                controller.PostgresOptions
	selfMonitoring          bool
	installCRDs             bool
	manageRBAC              bool
}

func newOperatorCommand() *cobra.Command {
	o := operatorOptions{}
	cmd := &cobra.Command{
		Use:   "operator",
		Short: "Run the operator: reconcile Prometheus objects and their monitors",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.watchListSet = cmd.Flags().Changed("watch-list")
			return runOperator(o)
		},
	}
	o.addFlags(cmd.Flags())
	return cmd
}

func (o *operatorOptions) addFlags(f *pflag.FlagSet) {
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "Path to a kubeconfig; default: in-cluster configuration, then $KUBECONFIG, then ~/.kube/config")
	f.StringSliceVar(&o.namespaces, "namespaces", nil, "Namespaces to watch (comma-separated); empty watches all namespaces")
	f.StringVar(&o.metricsAddr, "metrics-bind-address", ":8080", "Address of the Prometheus metrics endpoint; 0 disables it")
	f.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081", "Address of /healthz and /readyz")
	f.StringVar(&o.pprofAddr, "pprof-bind-address", "", "Address of the Go profiler's /debug/pprof/ endpoints, e.g. 127.0.0.1:6060; empty or 0 disables it. Unauthenticated: bind it to loopback or protect it")
	f.Float32Var(&o.kubeAPIQPS, "kube-api-qps", 500, "Sustained requests per second this client sends to the Kubernetes API (client-side limit; the apiserver's API Priority and Fairness still protects it)")
	f.IntVar(&o.kubeAPIBurst, "kube-api-burst", 1000, "Requests this client may send in a burst above --kube-api-qps")
	f.BoolVar(&o.leaderElect, "leader-elect", true, "Elect a leader so that only one replica reconciles at a time")
	f.StringVar(&o.leaderElectionNamespace, "leader-election-namespace", "", "Namespace of the leader-election Lease (default: $POD_NAMESPACE, else default)")
	f.DurationVar(&o.leaseDuration, "leader-election-lease-duration", 15*time.Second, "How long a standby waits before taking over the Lease of a leader that stopped renewing it (a leader that exits cleanly releases it at once)")
	f.DurationVar(&o.renewDeadline, "leader-election-renew-deadline", 10*time.Second, "How long the leader keeps trying to renew the Lease before it gives up leadership; less than the lease duration")
	f.DurationVar(&o.retryPeriod, "leader-election-retry-period", 2*time.Second, "How often replicas try to acquire or renew the Lease")
	f.StringVar(&o.logFormat, "log-format", "json", "Log format: json or text")
	f.StringVar(&o.logLevel, "log-level", "info", "Log level: debug, info, warn or error")
	f.IntVar(&o.workers, "workers", 4, "Concurrent reconciles per controller")
	f.BoolVar(&o.webhook, "webhook", true, "Serve the validating admission webhook and manage its ValidatingWebhookConfiguration")
	f.BoolVar(&o.wh.Conversion, "webhook-conversion", false, "Point the AlertmanagerConfig CRD's conversion at this webhook (v1beta1 <-> v1alpha1 without losing fields). Off, a conversion left pointing at it is set back to None; turn it off before uninstalling, or the CRD calls a Service that is gone")
	f.IntVar(&o.wh.Port, "webhook-port", 9443, "Port of the webhook server")
	f.StringVar(&o.wh.Host, "webhook-host", "", "Address the webhook server binds (default: all)")
	f.StringVar(&o.wh.CertDir, "webhook-cert-dir", filepath.Join(os.TempDir(), "lookout-webhook-certs"), "Directory of the webhook's tls.crt and tls.key")
	f.BoolVar(&o.wh.ManageCerts, "webhook-manage-certs", true, "Generate, store and rotate the webhook certificates and inject the CA bundle (off when cert-manager provides them)")
	f.StringVar(&o.wh.SecretName, "webhook-secret", "lookout-webhook-tls", "Secret (in the operator namespace) that stores the webhook CA and certificate")
	f.StringVar(&o.wh.ServiceName, "webhook-service", "lookout-webhook", "Service in front of the operator pods that the apiserver calls")
	f.Int32Var(&o.wh.ServicePort, "webhook-service-port", 443, "Port of that Service")
	f.StringVar(&o.wh.URL, "webhook-url", "", "Call the webhook at this https URL instead of the Service (operator outside the cluster)")
	f.StringSliceVar(&o.wh.ExtraSANs, "webhook-extra-sans", nil, "More DNS names or IPs for the webhook certificate")
	f.StringVar(&o.whFailurePolicy, "webhook-failure-policy", "Ignore", "Ignore (a webhook that is down never blocks the cluster) or Fail")
	f.Int32Var(&o.wh.TimeoutSeconds, "webhook-timeout-seconds", 5, "Seconds the apiserver waits for the webhook")
	f.StringVar(&o.wh.ConfigurationName, "webhook-configuration", "lookout", "Name of the ValidatingWebhookConfiguration")
	f.StringVar(&o.wh.CAInjectFrom, "webhook-ca-inject-from", "", "With --webhook-manage-certs=false: cert-manager Certificate <namespace>/<name> for CA injection")
	f.StringVar(&o.reloaderImage, "reloader-image", version.ReloaderImage(), "Image of the config-reloader sidecar")
	f.StringSliceVar(&o.controllers, "controllers", nil, "Controllers to run (comma-separated), of "+controllerNames()+"; empty runs every one whose CRD is installed")
	f.StringVar(&o.postgres.Image, "postgres-image", version.Image("lookout-postgres"), "Image of the PostgreSQL instances of a PostgresCluster whose spec.image is empty")
	f.StringSliceVar(&o.postgres.BinDirs, "postgres-bin-dirs", pgcontract.DefaultBinDirGlobs, "Globs of PostgreSQL bin directories (<...>/<major>/bin) on the operator's filesystem: the majors a PostgresCluster may ask for, and the parameters each accepts; when they hold none (the operator's image), the catalog of the lookout-postgres image of this version, built in")
	f.Int64Var(&o.postgres.RunAsUser, "postgres-uid", pgrender.DefaultRunAsUser, "User (and group, fsGroup) id of the PostgreSQL containers, as the instance image has it")
	f.BoolVar(&o.manageRBAC, "manage-rbac", false, "Give the generated pods the RBAC they use: Prometheus's discovery Roles or ClusterRole, the reloaders' read of their config Secret. Needs write rights on ClusterRoles, Roles and bindings, which RBAC cannot limit to the operator's own (a leaked token could empty any role). Off, as with prometheus-operator, bind the Prometheus ServiceAccount to the discovery rights yourself; the reloaders then follow the mounted config")
	f.BoolVar(&o.selfMonitoring, "self-monitoring", false, "When leading, apply the operator's own ServiceMonitor, the reloaders' PodMonitor (in the watched namespaces) and its PrometheusRule in the operator's namespace")
	f.BoolVar(&o.installCRDs, "install-crds", false, "Apply the CRDs built into this binary at start and wait until they are served: the monitoring.coreos.com ones unless --controllers names only postgrescluster, the PostgresCluster one when it names postgrescluster (server-side apply: an older schema is upgraded, other owners' fields such as the conversion webhook are kept)")
	f.BoolVar(&o.watchList, "watch-list", false, "Informers receive their initial objects as a stream of watch events (client-go's WatchListClient) instead of pages of lists: less apiserver memory for very large collections, a slower start (default: pages, unless KUBE_FEATURE_WatchListClient says otherwise)")
}

func newLogger(format, level string) (logr.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		return logr.Logger{}, fmt.Errorf("invalid --log-level %q: %w", level, err)
	}
	opts := &slog.HandlerOptions{Level: lvl}
	switch format {
	case "json":
		return logr.FromSlogHandler(slog.NewJSONHandler(os.Stderr, opts)), nil
	case "text":
		return logr.FromSlogHandler(slog.NewTextHandler(os.Stderr, opts)), nil
	default:
		return logr.Logger{}, fmt.Errorf("invalid --log-format %q: want json or text", format)
	}
}

func runOperator(o operatorOptions) error {
	log, err := newLogger(o.logFormat, o.logLevel)
	if err != nil {
		return err
	}
	ctrl.SetLogger(log)
	if err := o.validate(); err != nil {
		return err
	}
	setGCPercent()
	if err := setWatchList(o.watchList, o.watchListSet); err != nil {
		return err
	}

	cfg, err := restConfig(o.kubeconfig)
	if err != nil {
		return fmt.Errorf("load Kubernetes client configuration: %w", err)
	}
	cfg.QPS, cfg.Burst = o.kubeAPIQPS, o.kubeAPIBurst
	// How long requests take and how long they wait for the client's own
	// rate limiter (rest_client_request_duration_seconds,
	// rest_client_rate_limiter_duration_seconds): whether --kube-api-qps or
	// the apiserver is what a slow reconcile waits for.
	crmetrics.RegisterRESTClientMetrics(crmetrics.MetricRequestLatency, crmetrics.MetricRateLimiterLatency)

	leNamespace := o.leaderElectionNamespace
	if leNamespace == "" {
		leNamespace = os.Getenv("POD_NAMESPACE")
	}
	if leNamespace == "" {
		leNamespace = "default"
	}

	for i := range o.namespaces {
		o.namespaces[i] = strings.TrimSpace(o.namespaces[i])
	}
	cacheOpts := controller.CacheOptions(o.namespaces)

	if o.installCRDs {
		if err := applyCRDs(cfg, o.controllers); err != nil {
			return err
		}
	}

	o.wh.Namespace = leNamespace
	o.wh.FailurePolicy = admissionregistrationv1.FailurePolicyType(o.whFailurePolicy)
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		WebhookServer:                 crwebhook.NewServer(o.wh.ServerOptions()),
		Scheme:                        scheme.Scheme,
		Cache:                         cacheOpts,
		Metrics:                       metricsserver.Options{BindAddress: o.metricsAddr},
		HealthProbeBindAddress:        o.probeAddr,
		PprofBindAddress:              o.pprofAddr,
		LeaderElection:                o.leaderElect,
		LeaderElectionID:              "lookout-operator-leader",
		LeaderElectionNamespace:       leNamespace,
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 &o.leaseDuration,
		RenewDeadline:                 &o.renewDeadline,
		RetryPeriod:                   &o.retryPeriod,
		GracefulShutdownTimeout:       ptrDuration(15 * time.Second),
		Client: client.Options{Cache: &client.CacheOptions{
			// Secrets and ConfigMaps are cached as metadata only; a typed
			// read of one goes to the API instead of starting an informer
			// that would hold every Secret of the cluster in memory.
			DisableFor: []client.Object{&corev1.Secret{}, &corev1.ConfigMap{}},
		}},
	})
	if err != nil {
		return fmt.Errorf("create manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("cache", func(req *http.Request) error {
		if !mgr.GetCache().WaitForCacheSync(req.Context()) {
			return fmt.Errorf("informer caches not synced")
		}
		return nil
	}); err != nil {
		return err
	}
	if o.webhook {
		// Every replica serves the webhook; only the leader reconciles.
		if o.postgres.Installation, err = postgresInstallation(mgr, o); err != nil {
			return err
		}
		o.wh.Postgres = o.postgres.Installation
		o.wh.NoMonitoring = !runsMonitoring(o.controllers)
		if err := lookoutwebhook.Setup(mgr, o.wh); err != nil {
			return fmt.Errorf("set up the admission webhook: %w", err)
		}
		if err := mgr.AddReadyzCheck("webhook", mgr.GetWebhookServer().StartedChecker()); err != nil {
			return err
		}
	} else if err := mgr.Add(lookoutwebhook.ConversionReleaser{
		Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Options: o.wh, Log: log.WithName("webhook"),
	}); err != nil {
		return err
	}
	if err := controller.Setup(mgr, controller.Options{
		Workers:       o.workers,
		ReloaderImage: o.reloaderImage,
		Controllers:   o.controllers,
		Postgres:      o.postgres,
		NoRBAC:        !o.manageRBAC,
	}); err != nil {
		return fmt.Errorf("set up controllers: %w", err)
	}

	if o.selfMonitoring {
		if err := mgr.Add(install.SelfMonitoring{
			Client:  mgr.GetClient(),
			Options: install.Options{Namespace: leNamespace, WatchNamespaces: o.namespaces},
			Log:     log.WithName("self-monitoring"),
		}); err != nil {
			return err
		}
	}

	log.Info("Starting Lookout operator", "version", version.Version, "commit", version.CommitOrUnknown(),
		"namespaces", o.namespaces, "manageRBAC", o.manageRBAC, "leaderElection", o.leaderElect, "kubeAPIQPS", o.kubeAPIQPS, "kubeAPIBurst", o.kubeAPIBurst)
	return mgr.Start(ctrl.SetupSignalHandler())
}

// validate checks the flags that need no I/O.
func (o operatorOptions) validate() error {
	if o.workers < 1 {
		return fmt.Errorf("--workers must be at least 1, got %d", o.workers)
	}
	// NaN fails the comparison too.
	if !(o.kubeAPIQPS > 0) {
		return fmt.Errorf("--kube-api-qps must be greater than 0, got %v", o.kubeAPIQPS)
	}
	if o.kubeAPIBurst <= 0 {
		return fmt.Errorf("--kube-api-burst must be greater than 0, got %d", o.kubeAPIBurst)
	}
	if o.retryPeriod <= 0 || o.renewDeadline <= o.retryPeriod || o.leaseDuration <= o.renewDeadline {
		return fmt.Errorf("leader election needs 0 < --leader-election-retry-period (%v) < --leader-election-renew-deadline (%v) < --leader-election-lease-duration (%v)",
			o.retryPeriod, o.renewDeadline, o.leaseDuration)
	}
	return nil
}

// runsMonitoring reports whether the operator runs a monitoring controller:
// with none named (every installed kind), or one of them named.
func runsMonitoring(controllers []string) bool {
	return len(controllers) == 0 || slices.ContainsFunc(controllers, func(c string) bool { return c != "postgrescluster" })
}

// applyCRDs applies the CRDs built into the binary, as every replica starts:
// the apiserver writes nothing when they are already this version's. They
// are the monitoring.coreos.com CRDs unless --controllers names only
// postgrescluster, and the PostgresCluster CRD when it names postgrescluster.
func applyCRDs(cfg *rest.Config, controllers []string) error {
	var all []*apiextensionsv1.CustomResourceDefinition
	if runsMonitoring(controllers) {
		monitoring, err := crds.Embedded()
		if err != nil {
			return err
		}
		all = append(all, monitoring...)
	}
	if slices.Contains(controllers, "postgrescluster") {
		pg, err := crds.EmbeddedPostgres()
		if err != nil {
			return err
		}
		all = append(all, pg...)
	}
	s := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := crds.Apply(ctx, c, all, crds.FieldOwner, 2*time.Minute); err != nil {
		return fmt.Errorf("--install-crds: %w", err)
	}
	ctrl.Log.Info("Applied the CRDs", "crds", len(all))
	return nil
}

func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig != "" {
		return clientcmd.BuildConfigFromFlags("", kubeconfig)
	}
	return ctrl.GetConfig()
}

func ptrDuration(d time.Duration) *time.Duration { return &d }

// defaultGCPercent is the garbage collector's target unless GOGC says
// otherwise: the heap may grow to 1.4 times what is live between collections
// instead of Go's default 2 times. Almost everything the operator keeps is
// informer caches and rendered jobs, which are live; what a reconcile
// allocates after the first render is small, so collecting more often costs
// little CPU and keeps the footprint close to the live data (docs/benchmarks.md).
const defaultGCPercent = 40

// setWatchList chooses how informers make their initial list. client-go streams it as watch
// events by default (WatchListClient); pages of lists bring the operator's informers in sync
// sooner: at S1 (5,000 ServiceMonitors, 30,000 Secrets and ConfigMaps), 0.55-0.95 s against
// 0.75-1.7 s (docs/benchmarks.md). So the operator lists in pages unless --watch-list, or
// else KUBE_FEATURE_WatchListClient, says otherwise.
func setWatchList(on, explicit bool) error {
	if !explicit {
		if _, set := os.LookupEnv("KUBE_FEATURE_" + string(clientfeatures.WatchListClient)); set {
			return nil
		}
	}
	gates, ok := clientfeatures.FeatureGates().(interface {
		Set(clientfeatures.Feature, bool) error
	})
	if !ok {
		return fmt.Errorf("--watch-list: client-go's feature gates cannot be set")
	}
	return gates.Set(clientfeatures.WatchListClient, on)
}

func setGCPercent() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(defaultGCPercent)
	}
}

// controllerNames lists the controllers --controllers takes.
func controllerNames() string {
	names := make([]string, len(controller.ControllerNames))
	for i, c := range controller.ControllerNames {
		names[i] = c.Name
	}
	return strings.Join(names, ", ")
}

// postgresInstallation reads the PostgreSQL the operator can run (nil when it
// runs no postgrescluster controller): in its bin directories, or, when it has
// none (its image), the catalog of lookout-postgres built in: the webhook and the controller check
// PostgresClusters against the same one.
func postgresInstallation(mgr ctrl.Manager, o operatorOptions) (*pgrender.Installation, error) {
	if len(o.controllers) > 0 && !slices.Contains(o.controllers, "postgrescluster") {
		return nil, nil
	}
	gk := schema.GroupKind{Group: postgresv1beta1.GroupVersion.Group, Kind: postgresv1beta1.Kind}
	if _, err := mgr.GetRESTMapper().RESTMapping(gk); meta.IsNoMatchError(err) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	inst, from, err := gather.PostgresFor(context.Background(), o.postgres.BinDirs...)
	if err != nil {
		return nil, err
	}
	mgr.GetLogger().Info("PostgreSQL majors the operator can run", "majors", inst.Majors(), "from", from)
	return &inst, nil
}
