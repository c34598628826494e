package pginstance

import (
	"fmt"
	"sort"
	"strings"

	"github.com/lookout-operator/lookout/internal/pgcontract"
)

// confFile is included from postgresql.conf; the manager rewrites it before
// every start and on every change. It is in PGDATA, so pg_basebackup and
// pg_rewind copy the primary's: the copy is replaced before postgres starts.
const confFile = "lookout.conf"

// managedParameters are the settings the manager owns: a Config.Parameters
// entry for one of them is ignored, as the controller documents.
var managedParameters = map[string]bool{
	"listen_addresses": true, "port": true, "unix_socket_directories": true, "unix_socket_permissions": true,
	"hba_file": true, "wal_level": true, "hot_standby": true, "wal_log_hints": true,
	"primary_conninfo": true, "primary_slot_name": true, "recovery_target_timeline": true,
	"synchronous_standby_names": true, "ssl": true, "ssl_cert_file": true, "ssl_key_file": true, "ssl_ca_file": true,
	"restore_command": true, "archive_mode": true, "cluster_name": true,
}

// archiveManaged are the archiving settings the manager owns when the
// cluster has backups (confInput.Archive).
var archiveManaged = map[string]bool{"archive_command": true, "archive_library": true}

// confInput is everything lookout.conf is made of.
type confInput struct {
	// Generation is the Config.Generation the file is written from.
	Generation int64
	Parameters map[string]string
	Port       int
	SocketDir  string
	Instance   string
	TLS        *tlsFiles
	// Follow is the primary's conninfo for a standby, empty on a primary or
	// a standby that must not stream (fenced, electing).
	Follow   string
	SlotName string
	SyncSet  syncSet
	// Archive are archive_mode and, with backups, archive_command and
	// archive_timeout; BackRest is pgbackrest.conf for BackRestPath.
	Archive      map[string]string
	BackRest     string
	BackRestPath string
}

type tlsFiles struct{ Cert, Key, CA string }

func renderConf(in confInput) string {
	var b strings.Builder
	b.WriteString("# Written by the Lookout instance manager before every start and on every change; edits are lost.\n")
	names := make([]string, 0, len(in.Parameters))
	for k := range in.Parameters {
		lk := strings.ToLower(k)
		if _, set := in.Archive[lk]; !managedParameters[lk] && !set && !(in.BackRest != "" && archiveManaged[lk]) {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	for _, k := range names {
		fmt.Fprintf(&b, "%s = %s\n", k, quoteConf(in.Parameters[k]))
	}
	set := func(k, v string) { fmt.Fprintf(&b, "%s = %s\n", k, quoteConf(v)) }
	set("listen_addresses", "*")
	set("port", fmt.Sprint(in.Port))
	set("unix_socket_directories", in.SocketDir)
	set("unix_socket_permissions", "0700")
	set("cluster_name", in.Instance)
	set("wal_level", "replica")
	set("hot_standby", "on")
	set("wal_log_hints", "on")
	if _, ok := in.Parameters["max_wal_senders"]; !ok {
		set("max_wal_senders", "10")
	}
	if _, ok := in.Parameters["max_replication_slots"]; !ok {
		set("max_replication_slots", "10")
	}
	if _, ok := in.Parameters["wal_keep_size"]; !ok {
		set("wal_keep_size", "128MB")
	}
	if _, ok := in.Parameters["hot_standby_feedback"]; !ok {
		set("hot_standby_feedback", "on")
	}
	if _, ok := in.Parameters["wal_receiver_status_interval"]; !ok {
		set("wal_receiver_status_interval", "1s")
	}
	// A standby retries streaming after this when the primary changed
	// (5 s by default): the new primary's writes wait for it in
	// synchronous mode.
	if _, ok := in.Parameters["wal_retrieve_retry_interval"]; !ok {
		set("wal_retrieve_retry_interval", "500ms")
	}
	if in.TLS != nil {
		set("ssl", "on")
		set("ssl_cert_file", in.TLS.Cert)
		set("ssl_key_file", in.TLS.Key)
		set("ssl_ca_file", in.TLS.CA)
	} else {
		set("ssl", "off")
	}
	archive := make([]string, 0, len(in.Archive))
	for k := range in.Archive {
		archive = append(archive, k)
	}
	sort.Strings(archive)
	for _, k := range archive {
		set(k, in.Archive[k])
	}
	set("primary_conninfo", in.Follow)
	set("primary_slot_name", in.SlotName)
	set("recovery_target_timeline", "latest")
	set("synchronous_standby_names", in.SyncSet.standbyNames())
	return b.String()
}

// quoteConf quotes a postgresql.conf value.
func quoteConf(v string) string {
	return "'" + strings.ReplaceAll(strings.ReplaceAll(v, `\`, `\\`), "'", "''") + "'"
}

// renderHBA lets the manager in through the private socket and everyone else
// in with SCRAM, over TLS when the instance has a certificate.
func renderHBA(tls bool) string {
	host := "host"
	if tls {
		host = "hostssl"
	}
	return "# Written by the Lookout instance manager.\n" +
		"local all all trust\n" +
		fmt.Sprintf("%s replication %s all scram-sha-256\n", host, pgcontract.ReplicationUser) +
		fmt.Sprintf("%s all all all scram-sha-256\n", host)
}

// conninfo is a libpq connection string to another instance as the
// replication user.
func conninfo(host string, port int, appName, passfile string, tls *tlsFiles, extra ...string) string {
	parts := []string{
		"host=" + quoteConninfo(host),
		fmt.Sprintf("port=%d", port),
		"user=" + quoteConninfo(pgcontract.ReplicationUser),
		"application_name=" + quoteConninfo(appName),
		"passfile=" + quoteConninfo(passfile),
		"connect_timeout=2",
	}
	if tls != nil {
		parts = append(parts, "sslmode=verify-ca", "sslrootcert="+quoteConninfo(tls.CA))
	} else {
		parts = append(parts, "sslmode=disable")
	}
	return strings.Join(append(parts, extra...), " ")
}

func quoteConninfo(v string) string {
	return "'" + strings.ReplaceAll(strings.ReplaceAll(v, `\`, `\\`), "'", `\'`) + "'"
}

// slotName is the physical replication slot the primary keeps for an
// instance: pod names may hold '-' and '.', slot names may not.
func slotName(instance string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(instance) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') || r == '_' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}
