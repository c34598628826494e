// Package pgbouncer is `lookout pgbouncer`, the entrypoint of a
// PostgresCluster's PgBouncer pods: it writes pgbouncer.ini from the
// controller's pgcontract.PoolerConfig, runs Debian's pgbouncer as its child,
// points every database at the instance holding the cluster's Lease (a
// failover or switchover repoints it), and serves pause and resume to the
// instance managers, which hold client transactions in the pooler while the
// primary changes.
package pgbouncer

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/lookout-operator/lookout/internal/pgcontract"
)

// AdminUser is the pooler's own admin console user; its password is made at
// each start and never leaves the pod.
const AdminUser = "_lookout_pooler"

// Files are where the pooler's files are.
type Files struct {
	// Dir holds pgbouncer.ini and userlist.txt (written at start and on
	// every change).
	Dir string
	// CA, Cert and Key: TLS to clients (Cert and Key) and to PostgreSQL
	// (CA verifies the instances); empty turns that side's TLS off.
	CA, Cert, Key string
}

func (f Files) Ini() string      { return f.Dir + "/pgbouncer.ini" }
func (f Files) Userlist() string { return f.Dir + "/userlist.txt" }

// Ini renders pgbouncer.ini: every database on primary (an address), the
// user's settings, and the pooler's own (listening, authentication, TLS).
func Ini(cfg pgcontract.PoolerConfig, f Files, primary string) []byte {
	var b strings.Builder
	where := fmt.Sprintf("host=%s port=%d", primary, cfg.PostgresPort)
	b.WriteString("; Written by lookout pgbouncer: every database is the cluster's primary.\n[databases]\n")
	if len(cfg.Databases) == 0 {
		fmt.Fprintf(&b, "* = %s\n", where)
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Databases)) {
		fmt.Fprintf(&b, "%s = %s\n", iniName(name), strings.TrimSpace(cfg.Databases[name]+" "+where))
	}
	if len(cfg.Users) > 0 {
		b.WriteString("\n[users]\n")
		for _, name := range slices.Sorted(maps.Keys(cfg.Users)) {
			fmt.Fprintf(&b, "%s = %s\n", iniName(name), cfg.Users[name])
		}
	}
	b.WriteString("\n[pgbouncer]\n")
	own := [][2]string{
		{"listen_addr", "*"},
		{"listen_port", fmt.Sprint(cfg.Port)},
		{"unix_socket_dir", ""},
		{"auth_type", "scram-sha-256"},
		{"auth_file", f.Userlist()},
		{"admin_users", AdminUser},
	}
	if f.Cert != "" && f.Key != "" {
		own = append(own, [2]string{"client_tls_sslmode", "require"},
			[2]string{"client_tls_cert_file", f.Cert}, [2]string{"client_tls_key_file", f.Key})
	}
	if f.CA != "" {
		// verify-ca: the pooler reaches the primary by its pod address, which
		// the certificate does not name.
		own = append(own, [2]string{"server_tls_sslmode", "verify-ca"}, [2]string{"server_tls_ca_file", f.CA})
	}
	for _, kv := range own {
		fmt.Fprintf(&b, "%s = %s\n", kv[0], kv[1])
	}
	global := maps.Clone(cfg.Global)
	if global == nil {
		global = map[string]string{}
	}
	// JDBC sends extra_float_digits at start; PgBouncer refuses a client
	// whose startup packet has a parameter it does not know.
	if _, ok := global["ignore_startup_parameters"]; !ok {
		global["ignore_startup_parameters"] = "extra_float_digits"
	}
	for _, k := range slices.Sorted(maps.Keys(global)) {
		fmt.Fprintf(&b, "%s = %s\n", k, global[k])
	}
	return []byte(b.String())
}

// iniName quotes a database or user name that is not a plain word.
func iniName(name string) string {
	for _, r := range name {
		if !(r == '_' || r == '*' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
		}
	}
	return name
}

// Userlist is PgBouncer's auth_file: the users the controller rendered (with
// their SCRAM verifiers) and the admin user with this start's password.
func Userlist(users []byte, adminPassword string) []byte {
	out := append([]byte{}, users...)
	if len(out) > 0 && out[len(out)-1] != '\n' {
		out = append(out, '\n')
	}
	return append(out, fmt.Sprintf("%q %q\n", AdminUser, adminPassword)...)
}
