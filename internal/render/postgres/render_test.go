package postgres_test

import (
	"context"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"math/big"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	postgresv1beta1 "github.com/lookout-operator/lookout/api/postgres/v1beta1"
	"github.com/lookout-operator/lookout/internal/gather"
	"github.com/lookout-operator/lookout/internal/pgcontract"
	"github.com/lookout-operator/lookout/internal/render/golden"
	pg "github.com/lookout-operator/lookout/internal/render/postgres"
	"github.com/lookout-operator/lookout/internal/render/workload"
)

var (
	installOnce sync.Once
	install     pg.Installation
	installErr  error
)

// installation is what the PostgreSQL installed on this machine accepts, read
// from its own `postgres --describe-config` (Debian's postgresql-15).
func installation(t *testing.T) pg.Installation {
	t.Helper()
	installOnce.Do(func() {
		install, installErr = gather.PostgresInstallation(context.Background(), gather.DefaultPostgresBinDirs)
	})
	if installErr != nil {
		t.Fatal(installErr)
	}
	if _, ok := install.Parameters[15]; !ok {
		t.Fatalf("PostgreSQL 15 is not installed under %s (Debian's postgresql-15; .ci/run installs it)", gather.DefaultPostgresBinDirs)
	}
	return install
}

func storage(size string) corev1.PersistentVolumeClaimSpec {
	return corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}},
	}
}

// hippo is the cluster of PGO's quickstart: one set of three instances.
func hippo(opts ...func(*postgresv1beta1.PostgresCluster)) *postgresv1beta1.PostgresCluster {
	c := &postgresv1beta1.PostgresCluster{
		TypeMeta:   metav1.TypeMeta{APIVersion: postgresv1beta1.GroupVersion.String(), Kind: postgresv1beta1.Kind},
		ObjectMeta: metav1.ObjectMeta{Namespace: "zoo", Name: "hippo", UID: "0c1d4d4e-0000-4000-8000-000000000001", Generation: 3},
		Spec: postgresv1beta1.PostgresClusterSpec{
			PostgresVersion: 15,
			InstanceSets: []postgresv1beta1.PostgresInstanceSetSpec{{
				Name: "instance1", Replicas: ptr.To[int32](3), DataVolumeClaimSpec: storage("1Gi"),
			}},
		},
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

func dynamicConfiguration(js string) func(*postgresv1beta1.PostgresCluster) {
	return func(c *postgresv1beta1.PostgresCluster) {
		if c.Spec.Patroni == nil {
			c.Spec.Patroni = &postgresv1beta1.PatroniSpec{}
		}
		c.Spec.Patroni.DynamicConfiguration = &apiextensionsv1.JSON{Raw: []byte(js)}
	}
}

func inputs(t *testing.T, c *postgresv1beta1.PostgresCluster, seed byte) *pg.Inputs {
	return &pg.Inputs{
		Cluster:      c,
		Installation: installation(t),
		Image:        "ghcr.io/lookout-operator/lookout-postgres:15",
		RunAsUser:    pg.DefaultRunAsUser,
		Monitoring:   true,
		Seed:         [32]byte{seed},
		Now:          time.Date(2026, 11, 28, 17, 0, 0, 0, time.UTC),
	}
}

func render(t *testing.T, in *pg.Inputs) *pg.Desired {
	t.Helper()
	d, err := pg.Render(in)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestGoldens(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cluster *postgresv1beta1.PostgresCluster
	}{
		{"quickstart", hippo()},
		{"users-wal-services-sync", hippo(func(c *postgresv1beta1.PostgresCluster) {
			c.Spec.Port = ptr.To[int32](5433)
			c.Spec.Users = []postgresv1beta1.PostgresUserSpec{
				{Name: "rhino", Databases: []string{"zoo"}},
				{Name: "app-reader", Options: "NOSUPERUSER", Password: &postgresv1beta1.PostgresPasswordSpec{Type: "AlphaNumeric"}},
			}
			c.Spec.InstanceSets[0].WALVolumeClaimSpec = ptr.To(storage("512Mi"))
			c.Spec.InstanceSets[0].MinAvailable = ptr.To(intstr.FromInt32(2))
			c.Spec.InstanceSets[0].Resources = corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")}}
			c.Spec.InstanceSets[0].Tolerations = []corev1.Toleration{{Key: "db", Operator: corev1.TolerationOpExists}}
			c.Spec.InstanceSets = append(c.Spec.InstanceSets, postgresv1beta1.PostgresInstanceSetSpec{DataVolumeClaimSpec: storage("1Gi")})
			c.Spec.Service = &postgresv1beta1.ServiceSpec{Type: "NodePort", NodePort: ptr.To[int32](32000)}
			c.Spec.Patroni = &postgresv1beta1.PatroniSpec{LeaderLeaseDurationSeconds: ptr.To[int32](10)}
			dynamicConfiguration(`{"synchronous_mode": true, "maximum_lag_on_failover": 1048576,
				"postgresql": {"parameters": {"max_connections": 200, "shared_buffers": "64MB", "log_min_duration_statement": "1s", "pg_stat_statements.track": "all"}}}`)(c)
		})},
		{"shutdown", hippo(func(c *postgresv1beta1.PostgresCluster) { c.Spec.Shutdown = ptr.To(true) })},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := render(t, inputs(t, tc.cluster, 1))
			golden.Objects(t, filepath.Join("testdata", tc.name+".yaml"), d.Objects)
		})
	}
}

func TestRenderIsDeterministic(t *testing.T) {
	a := render(t, inputs(t, hippo(), 7))
	b := render(t, inputs(t, hippo(), 7))
	if len(a.Objects) != len(b.Objects) {
		t.Fatal("object counts differ")
	}
	for i := range a.Objects {
		ja, _ := json.Marshal(a.Objects[i])
		jb, _ := json.Marshal(b.Objects[i])
		if string(ja) != string(jb) {
			t.Errorf("%s differs between two renders of the same inputs", a.Objects[i].GetName())
		}
	}
}

func secretsOf(objs []workload.Object) map[string]*corev1.Secret {
	out := map[string]*corev1.Secret{}
	for _, o := range objs {
		if s, ok := o.(*corev1.Secret); ok {
			out[s.Name] = s
		}
	}
	return out
}

func statefulSetsOf(objs []workload.Object) []*appsv1.StatefulSet {
	var out []*appsv1.StatefulSet
	for _, o := range objs {
		if s, ok := o.(*appsv1.StatefulSet); ok {
			out = append(out, s)
		}
	}
	return out
}

// What was generated once stays: another render with another seed, handed
// the Secrets and StatefulSets the first one made, writes the same passwords,
// verifiers, keys, certificates and instance names.
func TestGeneratedValuesAreKeptAcrossRenders(t *testing.T) {
	first := render(t, inputs(t, hippo(), 1))
	in := inputs(t, hippo(), 2)
	in.Secrets = secretsOf(first.Objects)
	in.StatefulSets = statefulSetsOf(first.Objects)
	second := render(t, in)
	for name, s := range secretsOf(first.Objects) {
		got := secretsOf(second.Objects)[name]
		for k, v := range s.Data {
			if string(got.Data[k]) != string(v) {
				t.Errorf("Secret %s key %s changed between renders", name, k)
			}
		}
	}
	if a, b := first.Instances["instance1"], second.Instances["instance1"]; strings.Join(a, ",") != strings.Join(b, ",") {
		t.Errorf("instances renamed: %v, then %v", a, b)
	}
	// Without them, another seed generates other values.
	fresh := render(t, inputs(t, hippo(), 2))
	if string(secretsOf(fresh.Objects)["hippo-pguser-hippo"].Data["password"]) == string(secretsOf(first.Objects)["hippo-pguser-hippo"].Data["password"]) {
		t.Error("two seeds generated the same password")
	}
}

// A password someone changed in the user Secret is kept, and gets the
// verifier that goes with it.
func TestAChangedPasswordGetsItsVerifier(t *testing.T) {
	first := render(t, inputs(t, hippo(), 1))
	secrets := secretsOf(first.Objects)
	s := secrets["hippo-pguser-hippo"].DeepCopy()
	s.Data["password"] = []byte("a-new-password")
	secrets[s.Name] = s
	in := inputs(t, hippo(), 1)
	in.Secrets = secrets
	got := secretsOf(render(t, in).Objects)["hippo-pguser-hippo"]
	if string(got.Data["password"]) != "a-new-password" {
		t.Fatalf("password %q", got.Data["password"])
	}
	if string(got.Data["verifier"]) == string(s.Data["verifier"]) {
		t.Error("the verifier of the old password was kept")
	}
	if !strings.Contains(string(got.Data["uri"]), ":a-new-password@") {
		t.Errorf("uri %q", got.Data["uri"])
	}
}

// The verifier is the one PostgreSQL's SCRAM-SHA-256 exchange checks: with
// the salt and iterations of RFC 7677's example, its ServerKey signs that
// example's exchange exactly as the RFC's server does.
func TestTheVerifierIsSCRAMSHA256(t *testing.T) {
	v := pg.SCRAMVerifier("pencil", mustB64(t, "W22ZaJ0SNY7soEsUEjb6gQ=="), 4096)
	parts := strings.Split(strings.TrimPrefix(v, "SCRAM-SHA-256$"), "$")
	if len(parts) != 2 || parts[0] != "4096:W22ZaJ0SNY7soEsUEjb6gQ==" {
		t.Fatalf("verifier %q", v)
	}
	keys := strings.Split(parts[1], ":")
	serverKey := mustB64(t, keys[1])
	auth := "n=user,r=rOprNGfwEbeRWgbNEkqO," +
		"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096," +
		"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
	m := hmac.New(sha256.New, serverKey)
	m.Write([]byte(auth))
	if got := base64.StdEncoding.EncodeToString(m.Sum(nil)); got != "6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=" {
		t.Errorf("server signature %s, RFC 7677 says 6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=", got)
	}
}

func mustB64(t *testing.T, s string) []byte {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The server certificate is signed by the cluster CA for the names clients
// use, and the user Secret's keys say how to reach the primary.
func TestCertificatesAndUserSecret(t *testing.T) {
	secrets := secretsOf(render(t, inputs(t, hippo(), 1)).Objects)
	cert := secrets["hippo-cluster-cert"]
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(cert.Data["ca.crt"]) {
		t.Fatal("ca.crt does not parse")
	}
	block, _ := pem.Decode(cert.Data["tls.crt"])
	leaf, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"hippo-primary.zoo.svc", "hippo-replicas.zoo.svc.cluster.local", "hippo-instance1-abcd-0.hippo-pods.zoo.svc"} {
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: name, CurrentTime: time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)}); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	u := secrets["hippo-pguser-hippo"]
	pw := string(u.Data["password"])
	want := map[string]string{"user": "hippo", "dbname": "hippo", "host": "hippo-primary.zoo.svc", "port": "5432"}
	for k, v := range want {
		if string(u.Data[k]) != v {
			t.Errorf("%s = %q, want %q", k, u.Data[k], v)
		}
	}
	// What a client library reads out of the URIs.
	uri, err := url.Parse(string(u.Data["uri"]))
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := uri.User.Password(); uri.Scheme != "postgresql" || uri.User.Username() != "hippo" || p != pw || uri.Host != "hippo-primary.zoo.svc:5432" || uri.Path != "/hippo" || uri.RawQuery != "" {
		t.Errorf("uri %s", uri)
	}
	jdbc, err := url.Parse(strings.TrimPrefix(string(u.Data["jdbc-uri"]), "jdbc:"))
	if err != nil {
		t.Fatal(err)
	}
	if q := jdbc.Query(); jdbc.Host != "hippo-primary.zoo.svc:5432" || jdbc.Path != "/hippo" || q.Get("user") != "hippo" || q.Get("password") != pw {
		t.Errorf("jdbc-uri %s", u.Data["jdbc-uri"])
	}
	if !pg.Verifies(string(u.Data["verifier"]), pw) {
		t.Error("the verifier is not the password's")
	}
}

// The instance managers' config carries the honoured dynamic configuration,
// the users' verifiers (never passwords) and a switchover while its trigger
// has not been carried out.
func TestInstanceConfig(t *testing.T) {
	c := hippo(dynamicConfiguration(`{"synchronous_mode": "on", "synchronous_node_count": 2, "postgresql": {"parameters": {"work_mem": "8MB"}}}`),
		func(c *postgresv1beta1.PostgresCluster) {
			c.Spec.Patroni.Switchover = &postgresv1beta1.PatroniSwitchover{Enabled: true, TargetInstance: ptr.To("hippo-instance1-x2x2")}
			c.Annotations = map[string]string{pgcontract.AnnotationTriggerSwitchover: "t1"}
		})
	in := inputs(t, c, 1)
	in.StatefulSets = []*appsv1.StatefulSet{{ObjectMeta: metav1.ObjectMeta{Name: "hippo-instance1-x2x2", Labels: map[string]string{pgcontract.LabelInstanceSet: "instance1"}}}}
	d := render(t, in)
	var cfg pgcontract.Config
	if err := json.Unmarshal(secretsOf(d.Objects)["hippo-instance-config"].Data[pgcontract.ConfigKey], &cfg); err != nil {
		t.Fatal(err)
	}
	if !cfg.SynchronousMode || cfg.SynchronousNodeCount != 2 || cfg.Parameters["work_mem"] != "8MB" || cfg.Generation != 3 || cfg.LeaseDuration.Duration != 30*time.Second {
		t.Errorf("config %+v", cfg)
	}
	if len(cfg.Users) != 1 || !strings.HasPrefix(cfg.Users[0].Verifier, "SCRAM-SHA-256$4096:") {
		t.Errorf("users %+v", cfg.Users)
	}
	if cfg.Switchover == nil || cfg.Switchover.Target != "hippo-instance1-x2x2-0" || cfg.Switchover.Trigger != "t1" || cfg.Switchover.Type != "Switchover" {
		t.Errorf("switchover %+v", cfg.Switchover)
	}
	c.Status.Patroni.Switchover = ptr.To("t1")
	if d := render(t, in); d.Config.Switchover != nil {
		t.Errorf("a switchover carried out is asked for again: %+v", d.Config.Switchover)
	}
}

func TestBadInputIsRefusedWithAReason(t *testing.T) {
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "pgdata-hippo-instance1-abcd-0", Labels: map[string]string{pgcontract.LabelInstanceSet: "instance1", pg.LabelVolume: "pgdata"}},
		Spec:       storage("5Gi"),
	}
	for _, tc := range []struct {
		name, reason, contains string
		cluster                *postgresv1beta1.PostgresCluster
		claims                 []*corev1.PersistentVolumeClaim
	}{
		{"refuses every unsupported field by name", "UnsupportedField", "spec.instances[0].sidecars, spec.backups.pgbackrest.image, spec.proxy.pgBouncer.config.files are not supported", hippo(func(c *postgresv1beta1.PostgresCluster) {
			c.Spec.Backups = s3Backups()
			c.Spec.Backups.PGBackRest.Image = "crunchy-pgbackrest:ubi8-2.45-0"
			c.Spec.Proxy = &postgresv1beta1.PostgresProxySpec{PGBouncer: &postgresv1beta1.PGBouncerPodSpec{
				Config: postgresv1beta1.PGBouncerConfiguration{Files: &apiextensionsv1.JSON{Raw: []byte(`[{"secret":{"name":"x"}}]`)}}}}
			c.Spec.InstanceSets[0].Sidecars = &apiextensionsv1.JSON{Raw: []byte(`{}`)}
		}), nil},
		{"refuses a major that is not installed, naming those that are", "UnsupportedPostgresVersion", "PostgreSQL 11 is not installed for the operator; installed: 15", hippo(func(c *postgresv1beta1.PostgresCluster) {
			c.Spec.PostgresVersion = 11
		}), nil},
		{"refuses replicas 0 for the only set", "NoInstances", "spec.instances: every instance set has replicas: 0", hippo(func(c *postgresv1beta1.PostgresCluster) {
			c.Spec.InstanceSets[0].Replicas = ptr.To[int32](0)
		}), nil},
		{"refuses a data volume without a storage request", "InvalidSpec", "spec.instances[0].dataVolumeClaimSpec.resources.requests.storage: is required", hippo(func(c *postgresv1beta1.PostgresCluster) {
			c.Spec.InstanceSets[0].DataVolumeClaimSpec.Resources = corev1.VolumeResourceRequirements{}
		}), nil},
		{"refuses a parameter PostgreSQL does not know", "InvalidParameter", `PostgreSQL 15 has no parameter "shared_bufers"`, hippo(dynamicConfiguration(`{"postgresql":{"parameters":{"shared_bufers":"1GB"}}}`)), nil},
		{"refuses a parameter the instance manager owns", "InvalidParameter", "spec.patroni.dynamicConfiguration.postgresql.parameters.port: cannot be set: use spec.port", hippo(dynamicConfiguration(`{"postgresql":{"parameters":{"port":6000}}}`)), nil},
		{"refuses Patroni settings it does not map, by name", "UnsupportedField", "spec.patroni.dynamicConfiguration.loop_wait, spec.patroni.dynamicConfiguration.postgresql.pg_hba, spec.patroni.dynamicConfiguration.ttl:", hippo(dynamicConfiguration(`{"ttl":30,"loop_wait":10,"postgresql":{"pg_hba":["host all all all md5"]}}`)), nil},
		{"refuses a volume shrink", "VolumeShrink", "1Gi is less than what pgdata-hippo-instance1-abcd-0 (5Gi) already hold", hippo(), []*corev1.PersistentVolumeClaim{claim}},
		{"refuses a role name PostgreSQL reserves", "InvalidUser", `"pg_app" is not a role name Lookout can create: names starting with pg_ are reserved`, hippo(func(c *postgresv1beta1.PostgresCluster) {
			c.Spec.Users = []postgresv1beta1.PostgresUserSpec{{Name: "pg_app"}}
		}), nil},
		{"refuses a switchover target that is no instance", "UnknownSwitchoverTarget", `"hippo-instance1-nope" is not an instance of the cluster`, hippo(func(c *postgresv1beta1.PostgresCluster) {
			c.Spec.Patroni = &postgresv1beta1.PatroniSpec{Switchover: &postgresv1beta1.PatroniSwitchover{Enabled: true, TargetInstance: ptr.To("hippo-instance1-nope")}}
		}), nil},
		{"refuses a Failover without a target", "InvalidSpec", "targetInstance: is required when type is Failover", hippo(func(c *postgresv1beta1.PostgresCluster) {
			c.Spec.Patroni = &postgresv1beta1.PatroniSpec{Switchover: &postgresv1beta1.PatroniSwitchover{Enabled: true, Type: "Failover"}}
		}), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := inputs(t, tc.cluster, 1)
			in.Claims = tc.claims
			d, err := pg.Render(in)
			var se *workload.SpecError
			if !errors.As(err, &se) {
				t.Fatalf("got %v, %v; want a SpecError", d, err)
			}
			if se.Reason != tc.reason || !strings.Contains(se.Message, tc.contains) {
				t.Errorf("got %s: %s\nwant %s containing %q", se.Reason, se.Message, tc.reason, tc.contains)
			}
		})
	}
}

// The certificates are ECDSA P-256 signed with SHA-256, the signature hash
// SCRAM's channel binding (tls-server-end-point) needs; a pair of an earlier
// version (Ed25519, which has none) is made anew, and the server certificate
// with it, since the CA that signed it is gone.
func TestCertificatesAreECDSAAndEd25519PairsAreReplaced(t *testing.T) {
	first := render(t, inputs(t, hippo(), 1))
	for _, name := range []string{"hippo-cluster-ca", "hippo-cluster-cert"} {
		for _, key := range []string{"ca.crt", "tls.crt"} {
			data := secretsOf(first.Objects)[name].Data[key]
			if data == nil {
				continue
			}
			block, _ := pem.Decode(data)
			c, err := x509.ParseCertificate(block.Bytes)
			if err != nil {
				t.Fatal(err)
			}
			if c.PublicKeyAlgorithm != x509.ECDSA || c.SignatureAlgorithm != x509.ECDSAWithSHA256 {
				t.Errorf("%s %s: %v signed with %v, want ECDSA with SHA-256", name, key, c.PublicKeyAlgorithm, c.SignatureAlgorithm)
			}
		}
	}

	_, edKey, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), IsCA: true, BasicConstraintsValid: true,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(nil, tmpl, tmpl, edKey.Public(), edKey)
	if err != nil {
		t.Fatal(err)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(edKey)
	if err != nil {
		t.Fatal(err)
	}
	in := inputs(t, hippo(), 2)
	in.Secrets = secretsOf(first.Objects)
	old := in.Secrets["hippo-cluster-ca"].DeepCopy()
	old.Data["ca.crt"] = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	old.Data["ca.key"] = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8})
	in.Secrets["hippo-cluster-ca"] = old
	second := secretsOf(render(t, in).Objects)
	if string(second["hippo-cluster-ca"].Data["ca.crt"]) == string(old.Data["ca.crt"]) {
		t.Fatal("the Ed25519 CA was kept")
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(second["hippo-cluster-cert"].Data["ca.crt"])
	block, _ := pem.Decode(second["hippo-cluster-cert"].Data["tls.crt"])
	leaf, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: "hippo-primary.zoo.svc"}); err != nil {
		t.Errorf("the server certificate is not the new CA's: %v", err)
	}
}
