package pgbouncer

import (
	"strings"
	"testing"

	"github.com/lookout-operator/lookout/internal/pgcontract"
)

func TestIniPointsEveryDatabaseAtThePrimary(t *testing.T) {
	f := Files{Dir: "/run/p", CA: "/run/p/ca.crt", Cert: "/run/p/tls.crt", Key: "/run/p/tls.key"}
	cfg := pgcontract.PoolerConfig{Port: 6432, PostgresPort: 5433, Global: map[string]string{"pool_mode": "transaction"}}
	got := string(Ini(cfg, f, "10.0.0.7"))
	for _, want := range []string{
		"[databases]\n* = host=10.0.0.7 port=5433\n",
		"listen_port = 6432\n", "auth_type = scram-sha-256\n", "auth_file = /run/p/userlist.txt\n",
		"admin_users = " + AdminUser + "\n",
		"client_tls_sslmode = require\n", "client_tls_cert_file = /run/p/tls.crt\n",
		"server_tls_sslmode = verify-ca\n", "server_tls_ca_file = /run/p/ca.crt\n",
		"pool_mode = transaction\n", "ignore_startup_parameters = extra_float_digits\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("pgbouncer.ini lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "[users]") {
		t.Errorf("an empty [users] section:\n%s", got)
	}

	cfg.Databases = map[string]string{"zoo": "dbname=zoo pool_size=5", "my-db": ""}
	cfg.Users = map[string]string{"app": "pool_mode=session"}
	got = string(Ini(cfg, Files{Dir: "/run/p"}, "10.0.0.8"))
	for _, want := range []string{
		"\"my-db\" = host=10.0.0.8 port=5433\nzoo = dbname=zoo pool_size=5 host=10.0.0.8 port=5433\n",
		"[users]\napp = pool_mode=session\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("pgbouncer.ini lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "* = ") || strings.Contains(got, "tls") {
		t.Errorf("a fallback database or TLS without certificates:\n%s", got)
	}
}

func TestUserlistAddsTheAdmin(t *testing.T) {
	got := string(Userlist([]byte(`"app" "SCRAM-SHA-256$4096:c2FsdA==$a:b"`), "secret"))
	want := "\"app\" \"SCRAM-SHA-256$4096:c2FsdA==$a:b\"\n\"" + AdminUser + "\" \"secret\"\n"
	if got != want {
		t.Errorf("userlist:\n%s\nwant:\n%s", got, want)
	}
}
