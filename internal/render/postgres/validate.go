package postgres

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	postgresv1beta1 "github.com/lookout-operator/lookout/api/postgres/v1beta1"
	"github.com/lookout-operator/lookout/internal/pgcontract"
	"github.com/lookout-operator/lookout/internal/render/workload"
)

// Validate checks what can be checked of a PostgresCluster without the
// objects that exist (the webhook's part): unsupported fields, the version,
// the instance sets, users, the dynamic configuration, backups and the
// switchover.
func Validate(c *postgresv1beta1.PostgresCluster, inst Installation) error {
	if err := unsupportedFields(c); err != nil {
		return err
	}
	if err := checkVersion(c, inst); err != nil {
		return err
	}
	if err := checkInstanceSets(c); err != nil {
		return err
	}
	if err := checkUsers(c); err != nil {
		return err
	}
	if _, err := dynamicConfig(c, inst); err != nil {
		return err
	}
	if _, err := backupsConfig(c); err != nil {
		return err
	}
	if err := checkProxy(c); err != nil {
		return err
	}
	return checkSwitchover(c)
}

func specError(field, reason, format string, args ...any) *workload.SpecError {
	return &workload.SpecError{Field: field, Reason: reason, Message: field + ": " + fmt.Sprintf(format, args...)}
}

func set(j *apiextensionsv1.JSON) bool {
	return j != nil && len(j.Raw) > 0 && string(j.Raw) != "null"
}

// unsupportedFields refuses every field of PGO's API that is set and that
// Lookout does not honour, naming all of them.
func unsupportedFields(c *postgresv1beta1.PostgresCluster) error {
	s := &c.Spec
	var names []string
	add := func(field string, j *apiextensionsv1.JSON) {
		if set(j) {
			names = append(names, field)
		}
	}
	for _, f := range []struct {
		name string
		j    *apiextensionsv1.JSON
	}{
		{"metadata", s.Metadata},
		{"customTLSSecret", s.CustomTLSSecret}, {"customReplicationTLSSecret", s.CustomReplicationClientTLSSecret},
		{"databaseInitSQL", s.DatabaseInitSQL}, {"disableDefaultPodScheduling", s.DisableDefaultPodScheduling},
		{"imagePullPolicy", s.ImagePullPolicy}, {"imagePullSecrets", s.ImagePullSecrets}, {"openshift", s.OpenShift},
		{"postGISVersion", s.PostGISVersion}, {"userInterface", s.UserInterface},
		{"monitoring", s.Monitoring}, {"instrumentation", s.Instrumentation}, {"standby", s.Standby},
		{"supplementalGroups", s.SupplementalGroups}, {"config", s.Config}, {"authentication", s.Authentication},
	} {
		add("spec."+f.name, f.j)
	}
	for i := range s.InstanceSets {
		set := &s.InstanceSets[i]
		p := fmt.Sprintf("spec.instances[%d].", i)
		add(p+"metadata", set.Metadata)
		add(p+"containers", set.Containers)
		add(p+"priorityClassName", set.PriorityClassName)
		add(p+"sidecars", set.Sidecars)
		add(p+"tablespaceVolumes", set.TablespaceVolumes)
		add(p+"volumes", set.Volumes)
	}
	if p := s.Patroni; p != nil {
		add("spec.patroni.logging", p.Logging)
		if p.Port != nil && *p.Port != patroniDefaultPort {
			names = append(names, "spec.patroni.port")
		}
		if p.SyncPeriodSeconds != nil && *p.SyncPeriodSeconds != patroniDefaultPeriod {
			names = append(names, "spec.patroni.syncPeriodSeconds")
		}
	}
	for _, svc := range []struct {
		name string
		s    *postgresv1beta1.ServiceSpec
	}{{"spec.service", s.Service}, {"spec.replicaService", s.ReplicaService}} {
		if svc.s != nil {
			add(svc.name+".metadata", svc.s.Metadata)
		}
	}
	names = append(names, backupFields(c)...)
	names = append(names, proxyUnsupported(s.Proxy)...)
	if len(names) == 0 {
		return nil
	}
	verb := "is"
	if len(names) > 1 {
		verb = "are"
	}
	return &workload.SpecError{Field: names[0], Reason: workload.ReasonUnsupportedField,
		Message: strings.Join(names, ", ") + " " + verb + " not supported by Lookout; remove it to run this cluster (docs/postgres-compatibility.md lists what is honoured)"}
}

func checkVersion(c *postgresv1beta1.PostgresCluster, inst Installation) error {
	v := c.Spec.PostgresVersion
	if _, ok := inst.Parameters[v]; ok {
		return nil
	}
	majors := inst.Majors()
	have := "none"
	if len(majors) > 0 {
		s := make([]string, len(majors))
		for i, m := range majors {
			s[i] = strconv.Itoa(m)
		}
		have = strings.Join(s, ", ")
	}
	return specError("spec.postgresVersion", ReasonUnsupportedVersion, "PostgreSQL %d is not installed for the operator; installed: %s", v, have)
}

// maxNameLength is how long a cluster and a set name may be together (PGO's
// limit, from label values: the pods' controller-revision-hash label holds
// <cluster>-<set>-<4>-<10>).
const maxNameLength = 46

func checkInstanceSets(c *postgresv1beta1.PostgresCluster) error {
	total := int32(0)
	seen := map[string]bool{}
	for i := range c.Spec.InstanceSets {
		set := &c.Spec.InstanceSets[i]
		p := fmt.Sprintf("spec.instances[%d]", i)
		name := SetName(set, i)
		if seen[name] {
			return specError(p+".name", workload.ReasonInvalidSpec, "%q names two instance sets", name)
		}
		seen[name] = true
		if n := len(c.Name) + len(name); n > maxNameLength {
			return specError(p+".name", workload.ReasonInvalidSpec, "the cluster's name and the set's name %q are %d characters together; at most %d fit in the pods' labels", name, n, maxNameLength)
		}
		total += replicas(set)
		if err := workload.CheckClaimSpec(p+".dataVolumeClaimSpec", set.DataVolumeClaimSpec); err != nil {
			return err
		}
		if set.WALVolumeClaimSpec != nil {
			if err := workload.CheckClaimSpec(p+".walVolumeClaimSpec", *set.WALVolumeClaimSpec); err != nil {
				return err
			}
		}
		if err := workload.CheckResources(p+".resources", set.Resources); err != nil {
			return err
		}
		if m := set.MinAvailable; m != nil {
			if _, err := intstr.GetScaledValueFromIntOrPercent(m, int(replicas(set)), true); err != nil {
				return specError(p+".minAvailable", workload.ReasonInvalidSpec, "%v", err)
			}
		}
	}
	if total == 0 {
		return specError("spec.instances", ReasonNoInstances, "every instance set has replicas: 0; a cluster needs at least one instance (use spec.shutdown to stop it)")
	}
	return nil
}

func replicas(set *postgresv1beta1.PostgresInstanceSetSpec) int32 {
	if set.Replicas == nil {
		return 1
	}
	return *set.Replicas
}

// Users returns the users of the cluster: spec.users, or PGO's default, one
// user and one database named after the cluster.
func Users(c *postgresv1beta1.PostgresCluster) []postgresv1beta1.PostgresUserSpec {
	if c.Spec.Users == nil {
		return []postgresv1beta1.PostgresUserSpec{{Name: c.Name, Databases: []string{c.Name}}}
	}
	return c.Spec.Users
}

func checkUsers(c *postgresv1beta1.PostgresCluster) error {
	for i, u := range Users(c) {
		p := fmt.Sprintf("spec.users[%d]", i)
		if c.Spec.Users == nil {
			p = "metadata.name"
		}
		if why := invalidIdentifier(u.Name); why != "" {
			return specError(p+".name", ReasonInvalidUser, "%q is not a role name Lookout can create: %s", u.Name, why)
		}
		if u.Name == pgcontract.ReplicationUser {
			return specError(p+".name", ReasonInvalidUser, "%q is the replication user the instances use", u.Name)
		}
		for j, db := range u.Databases {
			if why := invalidIdentifier(db); why != "" {
				return specError(fmt.Sprintf("%s.databases[%d]", p, j), ReasonInvalidUser, "%q is not a database name Lookout can create: %s", db, why)
			}
			if db == "template0" || db == "template1" {
				return specError(fmt.Sprintf("%s.databases[%d]", p, j), ReasonInvalidUser, "%q is a template database", db)
			}
		}
		if strings.Contains(u.Options, ";") {
			return specError(p+".options", ReasonInvalidUser, "must not contain ';'")
		}
		if strings.Contains(strings.ToUpper(u.Options), "PASSWORD") {
			return specError(p+".options", ReasonInvalidUser, "must not set a PASSWORD: the password is generated and kept in Secret %s", UserSecretName(c.Name, u.Name))
		}
	}
	return nil
}

// invalidIdentifier says why name cannot be a role or database name, or "".
func invalidIdentifier(name string) string {
	switch {
	case name == "":
		return "it is empty"
	case len(name) > 63:
		return "PostgreSQL identifiers are at most 63 bytes"
	case strings.HasPrefix(name, "pg_"):
		return "names starting with pg_ are reserved by PostgreSQL"
	case name == "postgres" || name == "public" || name == "none" || name == "current_user" || name == "session_user" || name == "current_role":
		return "it is reserved"
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return fmt.Sprintf("%q is not a lowercase letter, digit, '-' or '_'", r)
		}
	}
	return ""
}

func checkSwitchover(c *postgresv1beta1.PostgresCluster) error {
	sw := switchover(c)
	if sw == nil {
		return nil
	}
	if sw.Type == postgresv1beta1.SwitchoverTypeFailover && (sw.TargetInstance == nil || *sw.TargetInstance == "") {
		return specError("spec.patroni.switchover.targetInstance", workload.ReasonInvalidSpec, "is required when type is Failover")
	}
	return nil
}

func switchover(c *postgresv1beta1.PostgresCluster) *postgresv1beta1.PatroniSwitchover {
	if c.Spec.Patroni == nil {
		return nil
	}
	return c.Spec.Patroni.Switchover
}

// checkTarget refuses a targetInstance that is none of the cluster's
// instances (it may name the instance or its pod).
func checkTarget(c *postgresv1beta1.PostgresCluster, instances []string) (string, error) {
	sw := switchover(c)
	if sw == nil || sw.TargetInstance == nil || *sw.TargetInstance == "" {
		return "", nil
	}
	t := *sw.TargetInstance
	for _, i := range instances {
		if t == i || t == PodName(i) {
			return PodName(i), nil
		}
	}
	return "", specError("spec.patroni.switchover.targetInstance", ReasonUnknownTarget, "%q is not an instance of the cluster; instances: %s", t, strings.Join(instances, ", "))
}

// checkShrink refuses a claim spec that asks less storage than a claim of
// the set already has: volumes are never shrunk.
func checkShrink(claims []*corev1.PersistentVolumeClaim, set, volume, field string, spec *corev1.PersistentVolumeClaimSpec) error {
	if spec == nil {
		return nil
	}
	want := spec.Resources.Requests[corev1.ResourceStorage]
	names := []string{}
	for _, pvc := range claims {
		if pvc.Labels[pgcontract.LabelInstanceSet] != set || pvc.Labels[LabelVolume] != volume {
			continue
		}
		if have := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; want.Cmp(have) < 0 {
			names = append(names, fmt.Sprintf("%s (%s)", pvc.Name, have.String()))
		}
	}
	if len(names) == 0 {
		return nil
	}
	slices.Sort(names)
	return specError(field+".resources.requests.storage", ReasonVolumeShrink, "%s is less than what %s already hold; volumes cannot shrink", want.String(), strings.Join(names, ", "))
}

// dynamic is the part of patroni.dynamicConfiguration Lookout honours.
type dynamic struct {
	parameters map[string]string
	syncMode   bool
	syncStrict bool
	syncCount  int
	maxLag     int64
}

// managedParameters are the settings the instance manager owns: replication,
// the listening socket, TLS and recovery.
var managedParameters = map[string]string{
	"listen_addresses": "the instance manager listens on the pod's addresses", "port": "use spec.port",
	"unix_socket_directories": "", "data_directory": "", "config_file": "", "hba_file": "", "ident_file": "",
	"external_pid_file": "", "ssl": "TLS is always on", "ssl_cert_file": "", "ssl_key_file": "", "ssl_ca_file": "",
	"primary_conninfo": "", "primary_slot_name": "", "promote_trigger_file": "", "restore_command": "",
	"recovery_target": "", "recovery_target_lsn": "", "recovery_target_name": "", "recovery_target_time": "",
	"recovery_target_xid": "", "recovery_target_timeline": "", "recovery_target_action": "", "recovery_target_inclusive": "",
	"hot_standby": "", "synchronous_standby_names": "use synchronous_mode and synchronous_node_count",
	"wal_log_hints": "pg_rewind needs it on", "cluster_name": "", "archive_mode": "", "archive_command": "",
}

// dynamicConfig reads patroni.dynamicConfiguration, refusing every key
// Lookout does not honour by name and every parameter PostgreSQL (of the
// cluster's major) does not know or the instance manager owns.
func dynamicConfig(c *postgresv1beta1.PostgresCluster, inst Installation) (*dynamic, error) {
	const field = "spec.patroni.dynamicConfiguration"
	d := &dynamic{}
	if c.Spec.Patroni == nil || !set(c.Spec.Patroni.DynamicConfiguration) {
		return d, nil
	}
	var raw map[string]any
	if err := json.Unmarshal(c.Spec.Patroni.DynamicConfiguration.Raw, &raw); err != nil {
		return nil, specError(field, ReasonInvalidConfiguration, "not an object: %v", err)
	}
	var unsupported []string
	for _, k := range slices.Sorted(maps.Keys(raw)) {
		v := raw[k]
		var err error
		switch k {
		case "postgresql":
			err = d.readPostgresql(field+".postgresql", v, &unsupported)
		case "synchronous_mode":
			d.syncMode, err = boolOf(field+"."+k, v)
		case "synchronous_mode_strict":
			d.syncStrict, err = boolOf(field+"."+k, v)
		case "synchronous_node_count":
			var n int64
			n, err = intOf(field+"."+k, v, 1)
			d.syncCount = int(n)
		case "maximum_lag_on_failover":
			d.maxLag, err = intOf(field+"."+k, v, 0)
		default:
			unsupported = append(unsupported, field+"."+k)
		}
		if err != nil {
			return nil, err
		}
	}
	if len(unsupported) > 0 {
		return nil, &workload.SpecError{Field: unsupported[0], Reason: workload.ReasonUnsupportedField,
			Message: strings.Join(unsupported, ", ") + ": not supported by Lookout (it honours postgresql.parameters, synchronous_mode, synchronous_mode_strict, synchronous_node_count and maximum_lag_on_failover)"}
	}
	known := inst.Parameters[c.Spec.PostgresVersion]
	for _, name := range slices.Sorted(maps.Keys(d.parameters)) {
		p := field + ".postgresql.parameters." + name
		if why, owned := managedParameters[name]; owned {
			if why == "" {
				why = "the instance manager sets it"
			}
			return nil, specError(p, ReasonInvalidParameter, "cannot be set: %s", why)
		}
		if !strings.Contains(name, ".") && known != nil && !known[name] {
			return nil, specError(p, ReasonInvalidParameter, "PostgreSQL %d has no parameter %q", c.Spec.PostgresVersion, name)
		}
		if name == "wal_level" && d.parameters[name] != "replica" && d.parameters[name] != "logical" {
			return nil, specError(p, ReasonInvalidParameter, "must be replica or logical: the replicas stream WAL")
		}
	}
	return d, nil
}

func (d *dynamic) readPostgresql(field string, v any, unsupported *[]string) error {
	m, ok := v.(map[string]any)
	if !ok {
		return specError(field, ReasonInvalidConfiguration, "must be an object")
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if k != "parameters" {
			*unsupported = append(*unsupported, field+"."+k)
			continue
		}
		params, ok := m[k].(map[string]any)
		if !ok {
			return specError(field+".parameters", ReasonInvalidConfiguration, "must be an object")
		}
		d.parameters = make(map[string]string, len(params))
		for name, val := range params {
			s, err := parameterValue(val)
			if err != nil {
				return specError(field+".parameters."+name, ReasonInvalidParameter, "%v", err)
			}
			d.parameters[strings.ToLower(name)] = s
		}
	}
	return nil
}

// parameterValue writes a YAML value as postgresql.conf takes it.
func parameterValue(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case bool:
		if x {
			return "on", nil
		}
		return "off", nil
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), nil
	default:
		return "", fmt.Errorf("must be a string, number or boolean, got %T", v)
	}
}

func boolOf(field string, v any) (bool, error) {
	switch x := v.(type) {
	case bool:
		return x, nil
	case string:
		switch strings.ToLower(x) {
		case "on", "true", "yes":
			return true, nil
		case "off", "false", "no":
			return false, nil
		}
	}
	return false, specError(field, ReasonInvalidConfiguration, "must be true or false, got %v", v)
}

func intOf(field string, v any, min int64) (int64, error) {
	f, ok := v.(float64)
	if !ok || f != float64(int64(f)) || int64(f) < min {
		return 0, specError(field, ReasonInvalidConfiguration, "must be a whole number of at least %d, got %v", min, v)
	}
	return int64(f), nil
}
