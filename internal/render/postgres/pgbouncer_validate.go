package postgres

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	postgresv1beta1 "github.com/lookout-operator/lookout/api/postgres/v1beta1"
	"github.com/lookout-operator/lookout/internal/render/workload"
)

// pgbouncerOwned are the [pgbouncer] settings `lookout pgbouncer` writes
// itself: where it listens, how clients and servers authenticate, TLS, its
// files and its admin console. A user's value for one is refused by name.
var pgbouncerOwned = []string{
	"listen_addr", "listen_port", "unix_socket_dir", "unix_socket_mode", "unix_socket_group", "user",
	"auth_type", "auth_file", "auth_hba_file", "auth_user", "auth_query", "auth_dbname",
	"admin_users", "stats_users", "logfile", "pidfile", "conffile", "syslog", "so_reuseport", "peer_id",
}

// pgbouncerSettings are the other [pgbouncer] settings of PgBouncer 1.18
// (Debian's); a name outside both lists is refused as unknown, since
// pgbouncer would only warn and ignore it.
var pgbouncerSettings = []string{
	"pool_mode", "max_client_conn", "default_pool_size", "min_pool_size", "reserve_pool_size",
	"reserve_pool_timeout", "max_db_connections", "max_user_connections", "server_round_robin",
	"ignore_startup_parameters", "disable_pqexec", "application_name_add_host", "stats_period",
	"job_name", "service_name", "syslog_ident", "syslog_facility", "log_connections", "log_disconnections",
	"log_pooler_errors", "log_stats", "verbose", "server_reset_query", "server_reset_query_always",
	"server_check_delay", "server_check_query", "server_fast_close", "server_lifetime",
	"server_idle_timeout", "server_connect_timeout", "server_login_retry", "client_login_timeout",
	"autodb_idle_timeout", "dns_max_ttl", "dns_nxdomain_ttl", "dns_zone_check_period", "resolv_conf",
	"query_timeout", "query_wait_timeout", "client_idle_timeout", "idle_transaction_timeout",
	"suspend_timeout", "pkt_buf", "max_packet_size", "listen_backlog", "sbuf_loopcnt",
	"tcp_defer_accept", "tcp_socket_buffer", "tcp_keepalive", "tcp_keepcnt", "tcp_keepidle",
	"tcp_keepintvl", "tcp_user_timeout",
}

// pgbouncerDatabaseOwned are the keys of a [databases] entry that say where
// the database is: Lookout points every entry at the current primary.
var pgbouncerDatabaseOwned = []string{"host", "hostaddr", "port", "auth_user"}

// proxyUnsupported names the fields of spec.proxy that are set and that
// Lookout does not honour.
func proxyUnsupported(p *postgresv1beta1.PostgresProxySpec) []string {
	if p == nil || p.PGBouncer == nil {
		return nil
	}
	b := p.PGBouncer
	var names []string
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"metadata", set(b.Metadata)}, {"customTLSSecret", set(b.CustomTLSSecret)},
		{"containers", set(b.Containers)}, {"priorityClassName", set(b.PriorityClassName)},
		{"sidecars", set(b.Sidecars)}, {"config.files", set(b.Config.Files)},
		{"service.metadata", b.Service != nil && set(b.Service.Metadata)},
	} {
		if f.set {
			names = append(names, "spec.proxy.pgBouncer."+f.name)
		}
	}
	return names
}

// checkProxy refuses pgbouncer settings Lookout owns or PgBouncer does not
// know, and database entries that name a host.
func checkProxy(c *postgresv1beta1.PostgresCluster) error {
	p := c.Spec.Proxy
	if p == nil || p.PGBouncer == nil {
		return nil
	}
	cfg := p.PGBouncer.Config
	const field = "spec.proxy.pgBouncer.config"
	for _, k := range slices.Sorted(maps.Keys(cfg.Global)) {
		switch {
		case slices.Contains(pgbouncerOwned, k), strings.HasPrefix(k, "client_tls_"), strings.HasPrefix(k, "server_tls_"):
			return specError(field+".global."+k, workload.ReasonUnsupportedField,
				"is set by Lookout (listening, authentication, TLS and files are the pooler's own); remove it")
		case !slices.Contains(pgbouncerSettings, k):
			return specError(field+".global."+k, ReasonInvalidParameter, "is not a setting of PgBouncer 1.18")
		case strings.ContainsAny(cfg.Global[k], "\n\r"):
			return specError(field+".global."+k, ReasonInvalidParameter, "the value spans lines")
		}
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Databases)) {
		f := fmt.Sprintf("%s.databases[%s]", field, name)
		if err := checkBouncerEntry(f, name, cfg.Databases[name], pgbouncerDatabaseOwned); err != nil {
			return err
		}
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Users)) {
		f := fmt.Sprintf("%s.users[%s]", field, name)
		if err := checkBouncerEntry(f, name, cfg.Users[name], nil); err != nil {
			return err
		}
	}
	return nil
}

// checkBouncerEntry checks one "name = key=value ..." line of pgbouncer.ini.
func checkBouncerEntry(field, name, value string, owned []string) error {
	if name == "" || strings.ContainsAny(name, "\n\r=[]") {
		return specError(field, ReasonInvalidParameter, "is not a name pgbouncer.ini can hold")
	}
	if strings.ContainsAny(value, "\n\r") {
		return specError(field, ReasonInvalidParameter, "the value spans lines")
	}
	for _, kv := range strings.Fields(value) {
		k, _, ok := strings.Cut(kv, "=")
		if !ok {
			return specError(field, ReasonInvalidParameter, "%q is not key=value", kv)
		}
		if slices.Contains(owned, k) {
			return specError(field, workload.ReasonUnsupportedField,
				"%s is set by Lookout: every database is the cluster's current primary", k)
		}
	}
	return nil
}
