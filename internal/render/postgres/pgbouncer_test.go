package postgres_test

import (
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/url"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	postgresv1beta1 "github.com/lookout-operator/lookout/api/postgres/v1beta1"
	"github.com/lookout-operator/lookout/internal/pgcontract"
	"github.com/lookout-operator/lookout/internal/render/golden"
	pg "github.com/lookout-operator/lookout/internal/render/postgres"
	"github.com/lookout-operator/lookout/internal/render/workload"
)

func withPooler(b postgresv1beta1.PGBouncerPodSpec) func(*postgresv1beta1.PostgresCluster) {
	return func(c *postgresv1beta1.PostgresCluster) {
		c.Spec.Proxy = &postgresv1beta1.PostgresProxySpec{PGBouncer: &b}
		c.Spec.Users = []postgresv1beta1.PostgresUserSpec{{Name: "rhino", Databases: []string{"zoo"}}, {Name: "app"}}
	}
}

func TestPoolerGolden(t *testing.T) {
	c := hippo(withPooler(postgresv1beta1.PGBouncerPodSpec{
		Replicas: ptr.To[int32](2),
		Port:     ptr.To[int32](6432),
		Config: postgresv1beta1.PGBouncerConfiguration{
			Global:    map[string]string{"max_client_conn": "500", "default_pool_size": "20"},
			Databases: map[string]string{"zoo": "dbname=zoo pool_size=10"},
			Users:     map[string]string{"app": "pool_mode=session"},
		},
		Tolerations: []corev1.Toleration{{Key: "pooler", Operator: corev1.TolerationOpExists}},
		Service:     &postgresv1beta1.ServiceSpec{Type: "NodePort", NodePort: ptr.To[int32](32100)},
	}))
	d := render(t, inputs(t, c, 1))
	var pooler []workload.Object
	for _, o := range d.Objects {
		if strings.HasPrefix(o.GetName(), "hippo-pgbouncer") {
			pooler = append(pooler, o)
		}
	}
	golden.Objects(t, "testdata/pgbouncer.yaml", pooler)
}

func TestNoPoolerWithoutProxy(t *testing.T) {
	d := render(t, inputs(t, hippo(), 1))
	for _, o := range d.Objects {
		if _, ok := o.(*appsv1.Deployment); ok || strings.Contains(o.GetName(), "pgbouncer") {
			t.Errorf("%T %s rendered without spec.proxy", o, o.GetName())
		}
	}
	if d.Config.Poolers != nil {
		t.Errorf("the instances are told of poolers without spec.proxy: %+v", d.Config.Poolers)
	}
	for _, s := range secretsOf(d.Objects) {
		if _, ok := s.Data[pg.KeyPoolerURI]; ok {
			t.Errorf("Secret %s has %s without spec.proxy", s.Name, pg.KeyPoolerURI)
		}
	}
}

// An application reads the pgbouncer-* keys of its Secret and connects to the
// pooler's Service with its own password; the pooler checks it against the
// same verifier the instances hold, and the instance managers hold the token
// the pooler takes.
func TestPoolerKeysUserlistAndToken(t *testing.T) {
	d := render(t, inputs(t, hippo(withPooler(postgresv1beta1.PGBouncerPodSpec{})), 1))
	secrets := secretsOf(d.Objects)
	rhino := secrets["hippo-pguser-rhino"]
	if got := string(rhino.Data[pg.KeyPoolerHost]); got != "hippo-pgbouncer.zoo.svc" {
		t.Errorf("pgbouncer-host = %q", got)
	}
	if got := string(rhino.Data[pg.KeyPoolerPort]); got != "5432" {
		t.Errorf("pgbouncer-port = %q", got)
	}
	u, err := url.Parse(string(rhino.Data[pg.KeyPoolerURI]))
	if err != nil {
		t.Fatal(err)
	}
	pw, _ := u.User.Password()
	if u.Host != "hippo-pgbouncer.zoo.svc:5432" || u.Path != "/zoo" || u.User.Username() != "rhino" || pw != string(rhino.Data[pg.KeyPassword]) {
		t.Errorf("pgbouncer-uri = %s", u.Redacted())
	}
	jdbc := string(rhino.Data[pg.KeyPoolerJDBCURI])
	if !strings.HasPrefix(jdbc, "jdbc:postgresql://hippo-pgbouncer.zoo.svc:5432/zoo?") || !strings.Contains(jdbc, "prepareThreshold=0") {
		t.Errorf("pgbouncer-jdbc-uri = %s", jdbc)
	}

	ps := secrets["hippo-pgbouncer"]
	userlist := string(ps.Data[pgcontract.PoolerUserlistKey])
	for _, user := range d.Config.Users {
		if !strings.Contains(userlist, `"`+user.Name+`" "`+user.Verifier+`"`) {
			t.Errorf("userlist lacks %s with the verifier the instances get:\n%s", user.Name, userlist)
		}
	}
	var cfg pgcontract.PoolerConfig
	if err := json.Unmarshal(ps.Data[pgcontract.PoolerConfigKey], &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Token == "" || d.Config.Poolers == nil || d.Config.Poolers.Token != cfg.Token {
		t.Errorf("pooler token %q, instances told %+v", cfg.Token, d.Config.Poolers)
	}
	if cfg.Global["pool_mode"] != pg.DefaultPoolMode || cfg.Port != 5432 || cfg.PostgresPort != 5432 {
		t.Errorf("pooler config %+v", cfg)
	}

	// The pooler's certificate is the cluster CA's, for its Service's names.
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ps.Data[pg.KeyCACert])
	block, _ := pem.Decode(ps.Data[pg.KeyTLSCert])
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: "hippo-pgbouncer.zoo.svc"}); err != nil {
		t.Errorf("the pooler's certificate: %v", err)
	}
	if string(ps.Data[pg.KeyCACert]) != string(secrets["hippo-cluster-cert"].Data[pg.KeyCACert]) {
		t.Error("the pooler's CA is not the cluster's")
	}
}

func TestPoolerValuesAreKeptAcrossRenders(t *testing.T) {
	c := hippo(withPooler(postgresv1beta1.PGBouncerPodSpec{}))
	first := render(t, inputs(t, c, 1))
	in := inputs(t, c, 2)
	in.Secrets = secretsOf(first.Objects)
	in.StatefulSets = statefulSetsOf(first.Objects)
	second := render(t, in)
	a, b := secretsOf(first.Objects)["hippo-pgbouncer"], secretsOf(second.Objects)["hippo-pgbouncer"]
	for k, v := range a.Data {
		if string(b.Data[k]) != string(v) {
			t.Errorf("pooler Secret key %s changed between renders", k)
		}
	}
}

func TestPoolerBadInput(t *testing.T) {
	for _, tc := range []struct {
		name, reason, contains string
		spec                   postgresv1beta1.PGBouncerPodSpec
	}{
		{"a setting the pooler owns", "UnsupportedField", "spec.proxy.pgBouncer.config.global.auth_type: is set by Lookout",
			postgresv1beta1.PGBouncerPodSpec{Config: postgresv1beta1.PGBouncerConfiguration{Global: map[string]string{"auth_type": "md5"}}}},
		{"TLS settings", "UnsupportedField", "spec.proxy.pgBouncer.config.global.client_tls_sslmode: is set by Lookout",
			postgresv1beta1.PGBouncerPodSpec{Config: postgresv1beta1.PGBouncerConfiguration{Global: map[string]string{"client_tls_sslmode": "disable"}}}},
		{"a setting PgBouncer does not know", "InvalidParameter", "spec.proxy.pgBouncer.config.global.max_client_connections: is not a setting of PgBouncer 1.18",
			postgresv1beta1.PGBouncerPodSpec{Config: postgresv1beta1.PGBouncerConfiguration{Global: map[string]string{"max_client_connections": "5"}}}},
		{"a database elsewhere", "UnsupportedField", "spec.proxy.pgBouncer.config.databases[zoo]: host is set by Lookout",
			postgresv1beta1.PGBouncerPodSpec{Config: postgresv1beta1.PGBouncerConfiguration{Databases: map[string]string{"zoo": "host=elsewhere dbname=zoo"}}}},
		{"a value over two lines", "InvalidParameter", "spec.proxy.pgBouncer.config.users[app]: the value spans lines",
			postgresv1beta1.PGBouncerPodSpec{Config: postgresv1beta1.PGBouncerConfiguration{Users: map[string]string{"app": "pool_mode=session\nauth_type=trust"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := pg.Render(inputs(t, hippo(withPooler(tc.spec)), 1))
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
