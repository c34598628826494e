package postgres

import (
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	postgresv1beta1 "github.com/lookout-operator/lookout/api/postgres/v1beta1"
	"github.com/lookout-operator/lookout/internal/pgcontract"
	"github.com/lookout-operator/lookout/internal/render/workload"
)

// Stanza names every cluster in its repositories (PGO's name).
const Stanza = "db"

// Reasons of the backup and restore errors.
const (
	ReasonInvalidBackups    = "InvalidBackups"
	ReasonInvalidDataSource = "InvalidDataSource"
	// ReasonDataSourceNotFound: the cluster restored from does not exist or
	// has no such repository; the reconcile waits for it.
	ReasonDataSourceNotFound = "DataSourceNotFound"
)

// backupFields are the fields of spec.backups and spec.dataSource that are
// set and that Lookout does not honour.
func backupFields(c *postgresv1beta1.PostgresCluster) []string {
	var names []string
	add := func(field string, on bool) {
		if on {
			names = append(names, field)
		}
	}
	projections := func(p string, cs []postgresv1beta1.ConfigurationProjection) {
		for i, s := range cs {
			q := fmt.Sprintf("%s.configuration[%d].", p, i)
			add(q+"configMap", set(s.ConfigMap))
			add(q+"downwardAPI", set(s.DownwardAPI))
			add(q+"serviceAccountToken", set(s.ServiceAccountToken))
			add(q+"clusterTrustBundle", set(s.ClusterTrustBundle))
		}
	}
	repo := func(p string, r *postgresv1beta1.PGBackRestRepo) {
		add(p+".azure", set(r.Azure))
		add(p+".gcs", set(r.GCS))
	}
	if b := c.Spec.Backups; b != nil {
		add("spec.backups.snapshots", set(b.Snapshots))
		a := &b.PGBackRest
		p := "spec.backups.pgbackrest"
		add(p+".metadata", set(a.Metadata))
		add(p+".image", a.Image != "")
		add(p+".repoHost", set(a.RepoHost))
		add(p+".sidecars", set(a.Sidecars))
		projections(p, a.Configuration)
		for i := range a.Repos {
			repo(fmt.Sprintf("%s.repos[%d]", p, i), &a.Repos[i])
		}
	}
	jobFields := func(p string, res, aff, prio, tol *apiextensionsv1.JSON) {
		add(p+".resources", set(res))
		add(p+".affinity", set(aff))
		add(p+".priorityClassName", set(prio))
		add(p+".tolerations", set(tol))
	}
	if b := c.Spec.Backups; b != nil && b.PGBackRest.Restore != nil {
		r := &b.PGBackRest.Restore.PostgresClusterDataSource
		jobFields("spec.backups.pgbackrest.restore", r.Resources, r.Affinity, r.PriorityClassName, r.Tolerations)
	}
	if d := c.Spec.DataSource; d != nil {
		add("spec.dataSource.volumes", set(d.Volumes))
		if s := d.PostgresCluster; s != nil {
			jobFields("spec.dataSource.postgresCluster", s.Resources, s.Affinity, s.PriorityClassName, s.Tolerations)
		}
		if s := d.PGBackRest; s != nil {
			p := "spec.dataSource.pgbackrest"
			jobFields(p, s.Resources, s.Affinity, s.PriorityClassName, s.Tolerations)
			projections(p, s.Configuration)
			add(p+".repo.volume", set(s.Repo.Volume))
			add(p+".repo.schedules", set(s.Repo.BackupSchedules))
			add(p+".repo.azure", set(s.Repo.Azure))
			add(p+".repo.gcs", set(s.Repo.GCS))
		}
	}
	return names
}

// ownedOptions are the pgBackRest options the instance manager writes
// itself: global may not set them.
var ownedOptions = map[string]string{
	"stanza": "the stanza is " + Stanza, "config": "", "config-path": "", "config-include-path": "",
	"lock-path": "", "spool-path": "", "log-path": "", "log-level-file": "", "log-level-console": "", "start-fast": "", "delta": "",
}

// ownedRepoOptions are per-repository options (repo1-…) the spec sets.
var ownedRepoOptions = map[string]string{
	"type":          "set by repos[].s3 or repos[].volume",
	"s3-bucket":     "set by repos[].s3.bucket",
	"s3-endpoint":   "set by repos[].s3.endpoint",
	"s3-region":     "set by repos[].s3.region",
	"s3-key":        "credentials belong in a configuration Secret, not in the spec",
	"s3-key-secret": "credentials belong in a configuration Secret, not in the spec",
	"s3-token":      "credentials belong in a configuration Secret, not in the spec",
	"host":          "pgBackRest runs in the instances: there is no repository host",
}

// repoOption splits "repo1-path" into "repo1" and "path".
func repoOption(key string) (repo, option string, ok bool) {
	if len(key) > 6 && strings.HasPrefix(key, "repo") && key[4] >= '1' && key[4] <= '4' && key[5] == '-' {
		return key[:5], key[6:], true
	}
	return "", "", false
}

// repoConfig turns a repository of the spec and the global options into
// what the instance manager is told: options that describe the repository
// (path, URI style, CA file, port) go into it, the rest stay global.
func repoConfig(field string, r *postgresv1beta1.PGBackRestRepo, global map[string]string) (pgcontract.Repo, error) {
	out := pgcontract.Repo{Name: r.Name}
	switch {
	case r.S3 != nil && r.Volume != nil:
		return out, specError(field, ReasonInvalidBackups, "set s3 or volume, not both")
	case r.S3 != nil:
		s := r.S3
		if s.Bucket == "" || s.Endpoint == "" || s.Region == "" {
			return out, specError(field+".s3", ReasonInvalidBackups, "bucket, endpoint and region are required")
		}
		host, port := s.Endpoint, 0
		if h, p, err := net.SplitHostPort(s.Endpoint); err == nil {
			n, err := strconv.Atoi(p)
			if err != nil || n < 1 || n > 65535 {
				return out, specError(field+".s3.endpoint", ReasonInvalidBackups, "%q: the port is not a number from 1 to 65535", s.Endpoint)
			}
			host, port = h, n
		}
		if strings.Contains(host, "/") {
			return out, specError(field+".s3.endpoint", ReasonInvalidBackups, "%q: a host name (with :port), without a scheme or path: pgBackRest speaks HTTPS", s.Endpoint)
		}
		out.S3 = &pgcontract.S3{Bucket: s.Bucket, Endpoint: host, Region: s.Region, Port: port}
	case r.Volume != nil:
		if err := workload.CheckClaimSpec(field+".volume.volumeClaimSpec", r.Volume.VolumeClaimSpec); err != nil {
			return out, err
		}
		out.Volume = &pgcontract.Volume{}
	default:
		return out, specError(field, ReasonInvalidBackups, "set s3 or volume (azure and gcs are not supported)")
	}
	for _, k := range slices.Sorted(maps.Keys(global)) {
		repo, opt, ok := repoOption(k)
		if !ok || repo != r.Name {
			continue
		}
		v := global[k]
		switch opt {
		case "path":
			out.Path = v
		case "s3-uri-style":
			if out.S3 != nil {
				out.S3.URIStyle = v
			}
		case "storage-ca-file":
			if out.S3 != nil {
				out.S3.CAFile = v
			}
		case "storage-port":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 65535 {
				return out, specError("spec.backups.pgbackrest.global."+k, ReasonInvalidBackups, "%q is not a port", v)
			}
			if out.S3 != nil {
				out.S3.Port = n
			}
		}
	}
	if out.Volume != nil && out.Path != "" && out.Path != repoMount(r.Name) && !strings.HasPrefix(out.Path, repoMount(r.Name)+"/") {
		return out, specError("spec.backups.pgbackrest.global."+r.Name+"-path", ReasonInvalidBackups,
			"%q is outside the repository's volume, mounted at %s", out.Path, repoMount(r.Name))
	}
	return out, nil
}

// liftedRepoOptions are the per-repository options repoConfig moves into
// the repository.
var liftedRepoOptions = map[string]bool{"path": true, "s3-uri-style": true, "storage-ca-file": true, "storage-port": true}

// repoMount is where a volume repository is mounted (PGO's path).
func repoMount(repo string) string { return "/pgbackrest/" + repo }

// checkGlobal refuses the options the operator owns and options of a
// repository that is not defined, naming them.
func checkGlobal(field string, global map[string]string, repos []postgresv1beta1.PGBackRestRepo) error {
	defined := map[string]bool{}
	for _, r := range repos {
		defined[r.Name] = true
	}
	for _, k := range slices.Sorted(maps.Keys(global)) {
		f := field + "." + k
		if why, owned := ownedOptions[k]; owned {
			if why == "" {
				why = "the instance manager sets it"
			}
			return specError(f, ReasonInvalidBackups, "cannot be set: %s", why)
		}
		if len(k) > 2 && k[:2] == "pg" && k[2] >= '1' && k[2] <= '9' {
			return specError(f, ReasonInvalidBackups, "cannot be set: the instance manager describes the instance (pg1-path, pg1-port …)")
		}
		repo, opt, ok := repoOption(k)
		if !ok {
			continue
		}
		if !defined[repo] {
			return specError(f, ReasonInvalidBackups, "%s is not one of the repositories", repo)
		}
		if why, owned := ownedRepoOptions[opt]; owned {
			return specError(f, ReasonInvalidBackups, "cannot be set: %s", why)
		}
	}
	return nil
}

// globalOptions are the options of global that stay global.
func globalOptions(global map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range global {
		if _, opt, ok := repoOption(k); ok && liftedRepoOptions[opt] {
			continue
		}
		out[k] = v
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// backupsConfig is Config.Backups: nil without spec.backups.
func backupsConfig(c *postgresv1beta1.PostgresCluster) (*pgcontract.Backups, error) {
	if c.Spec.Backups == nil {
		return nil, nil
	}
	a := &c.Spec.Backups.PGBackRest
	const p = "spec.backups.pgbackrest"
	if len(a.Repos) == 0 {
		return nil, specError(p+".repos", ReasonInvalidBackups, "at least one repository is required")
	}
	if err := checkGlobal(p+".global", a.Global, a.Repos); err != nil {
		return nil, err
	}
	if err := checkProjections(p, a.Configuration); err != nil {
		return nil, err
	}
	out := &pgcontract.Backups{Stanza: Stanza, Global: globalOptions(a.Global)}
	volumes := 0
	for i := range a.Repos {
		r := &a.Repos[i]
		f := fmt.Sprintf("%s.repos[%d]", p, i)
		repo, err := repoConfig(f, r, a.Global)
		if err != nil {
			return nil, err
		}
		if repo.Volume != nil {
			volumes++
			if n := totalInstances(c); n > 1 && !slices.Contains(r.Volume.VolumeClaimSpec.AccessModes, corev1.ReadWriteMany) {
				return nil, specError(f+".volume.volumeClaimSpec.accessModes", ReasonInvalidBackups,
					"the cluster has %d instances and whichever is primary archives to the volume: its claim needs ReadWriteMany (or use an s3 repository)", n)
			}
		}
		if err := checkSchedules(f+".schedules", r.BackupSchedules); err != nil {
			return nil, err
		}
		out.Repos = append(out.Repos, repo)
	}
	if m := a.Manual; m != nil {
		if !slices.ContainsFunc(a.Repos, func(r postgresv1beta1.PGBackRestRepo) bool { return r.Name == m.RepoName }) {
			return nil, specError(p+".manual.repoName", ReasonInvalidBackups, "%q is not one of the repositories", m.RepoName)
		}
		if _, err := manualType(m); err != nil {
			return nil, err
		}
	}
	if j := a.Jobs; j != nil {
		if err := workload.CheckResources(p+".jobs.resources", j.Resources); err != nil {
			return nil, err
		}
	}
	if err := checkInPlaceRestore(c); err != nil {
		return nil, err
	}
	return out, nil
}

func totalInstances(c *postgresv1beta1.PostgresCluster) int32 {
	var n int32
	for i := range c.Spec.InstanceSets {
		n += replicas(&c.Spec.InstanceSets[i])
	}
	return n
}

// checkProjections requires a name of each Secret.
func checkProjections(p string, cs []postgresv1beta1.ConfigurationProjection) error {
	for i, s := range cs {
		if s.Secret != nil && s.Secret.Name == "" {
			return specError(fmt.Sprintf("%s.configuration[%d].secret.name", p, i), ReasonInvalidBackups, "is required")
		}
	}
	return nil
}

// cronDescriptors are the @ schedules the CronJob controller takes.
var cronDescriptors = map[string]bool{"@yearly": true, "@annually": true, "@monthly": true, "@weekly": true, "@daily": true, "@midnight": true, "@hourly": true}

// checkSchedules checks the shape of each cron schedule (five fields or a
// descriptor); the apiserver checks the rest when the CronJob is written.
func checkSchedules(field string, s *postgresv1beta1.PGBackRestBackupSchedules) error {
	if s == nil {
		return nil
	}
	for _, e := range []struct {
		name string
		v    *string
	}{{"full", s.Full}, {"differential", s.Differential}, {"incremental", s.Incremental}} {
		if e.v == nil {
			continue
		}
		v := strings.TrimSpace(*e.v)
		if strings.HasPrefix(v, "@") {
			if !cronDescriptors[v] {
				return specError(field+"."+e.name, ReasonInvalidBackups, "%q is not a schedule (@hourly, @daily, @weekly, @monthly, @yearly)", v)
			}
			continue
		}
		if n := len(strings.Fields(v)); n != 5 {
			return specError(field+"."+e.name, ReasonInvalidBackups, "%q has %d fields; a cron schedule has 5 (minute hour day-of-month month day-of-week)", v, n)
		}
	}
	return nil
}

// manualType is the backup type of the manual backup: --type=, full by
// default. Other options are refused by name.
func manualType(m *postgresv1beta1.PGBackRestManualBackup) (string, error) {
	typ := pgcontract.BackupFull
	for i, o := range m.Options {
		f := fmt.Sprintf("spec.backups.pgbackrest.manual.options[%d]", i)
		v, ok := strings.CutPrefix(o, "--type=")
		if !ok {
			return "", specError(f, workload.ReasonUnsupportedField, "%q: Lookout honours --type=full|diff|incr only", o)
		}
		switch v {
		case pgcontract.BackupFull, pgcontract.BackupDiff, pgcontract.BackupIncr:
			typ = v
		default:
			return "", specError(f, ReasonInvalidBackups, "%q: the type is full, diff or incr", o)
		}
	}
	return typ, nil
}

// restoreOptions are the pgbackrest restore options a dataSource may give.
var restoreOptions = map[string]bool{
	"type": true, "target": true, "target-action": true, "target-exclusive": true, "target-timeline": true,
	"set": true, "db-include": true, "db-exclude": true, "process-max": true,
}

var restoreTypes = map[string]bool{"default": true, "immediate": true, "time": true, "xid": true, "lsn": true, "name": true}

// checkRestoreOptions refuses options the instance manager owns and a
// target type without its target, with reason.
func checkRestoreOptions(field, reason string, options []string) error {
	var typ, target string
	for i, o := range options {
		f := fmt.Sprintf("%s[%d]", field, i)
		name, value, _ := strings.Cut(strings.TrimPrefix(o, "--"), "=")
		if !strings.HasPrefix(o, "--") || !restoreOptions[name] {
			return specError(f, reason, "%q: Lookout takes --type, --target, --target-action, --target-exclusive, --target-timeline, --set, --db-include, --db-exclude and --process-max", o)
		}
		switch name {
		case "type":
			if !restoreTypes[value] {
				return specError(f, reason, "%q: the type is default, immediate, time, xid, lsn or name", o)
			}
			typ = value
		case "target":
			target = value
		}
	}
	if typ != "" && typ != "default" && typ != "immediate" && target == "" {
		return specError(field, reason, "--type=%s needs --target=…", typ)
	}
	return nil
}

// restoreSource is what a new cluster restores from: Config.Restore, and
// the configuration projected into RestoreConfDir.
type restoreSource struct {
	restore       *pgcontract.Restore
	configuration []postgresv1beta1.ConfigurationProjection
	// volume, once the data is initialized, is the restore volume the
	// instances run with: the source may be gone, and a changed volume
	// would restart every instance.
	volume *corev1.Volume
}

// restoreConfig reads spec.dataSource: nil without one. Once the cluster's
// data is initialized the source is not read again and Config.Restore is
// not sent: a restore happens once, before the first primary.
func restoreConfig(in *Inputs) (*restoreSource, error) {
	c := in.Cluster
	d := c.Spec.DataSource
	if d == nil || d.PostgresCluster == nil && d.PGBackRest == nil {
		return nil, nil
	}
	if DataInitialized(c) {
		for _, sts := range in.StatefulSets {
			for i := range sts.Spec.Template.Spec.Volumes {
				if v := &sts.Spec.Template.Spec.Volumes[i]; v.Name == volumeRestoreConf {
					return &restoreSource{volume: v.DeepCopy()}, nil
				}
			}
		}
		return &restoreSource{}, nil
	}
	if d.PostgresCluster != nil && d.PGBackRest != nil {
		return nil, specError("spec.dataSource", ReasonInvalidDataSource, "set postgresCluster or pgbackrest, not both")
	}
	if s := d.PGBackRest; s != nil {
		const p = "spec.dataSource.pgbackrest"
		if err := checkRestoreOptions(p+".options", ReasonInvalidDataSource, s.Options); err != nil {
			return nil, err
		}
		r := postgresv1beta1.PGBackRestRepo{Name: s.Repo.Name, S3: s.Repo.S3}
		if err := checkGlobal(p+".global", s.Global, []postgresv1beta1.PGBackRestRepo{r}); err != nil {
			return nil, err
		}
		if err := checkProjections(p, s.Configuration); err != nil {
			return nil, err
		}
		repo, err := repoConfig(p+".repo", &r, s.Global)
		if err != nil {
			return nil, err
		}
		stanza := s.Stanza
		if stanza == "" {
			stanza = Stanza
		}
		return &restoreSource{
			restore:       &pgcontract.Restore{Stanza: stanza, Repo: repo, Options: slices.Clone(s.Options)},
			configuration: s.Configuration,
		}, nil
	}
	s := d.PostgresCluster
	const p = "spec.dataSource.postgresCluster"
	if s.ClusterNamespace != "" && s.ClusterNamespace != c.Namespace {
		return nil, specError(p+".clusterNamespace", workload.ReasonUnsupportedField,
			"%q: Lookout restores from a cluster of the same namespace only (the source's configuration Secrets are projected into this cluster's pods)", s.ClusterNamespace)
	}
	if err := checkRestoreOptions(p+".options", ReasonInvalidDataSource, s.Options); err != nil {
		return nil, err
	}
	name := s.ClusterName
	if name == "" {
		name = c.Name
	}
	if name == c.Name {
		return nil, specError(p+".clusterName", ReasonInvalidDataSource, "names this cluster itself; name the cluster to restore from")
	}
	src := in.DataSource
	if src == nil || src.Name != name {
		return nil, specError(p+".clusterName", ReasonDataSourceNotFound, "PostgresCluster %s/%s does not exist", c.Namespace, name)
	}
	if src.Spec.Backups == nil {
		return nil, specError(p+".clusterName", ReasonDataSourceNotFound, "PostgresCluster %s/%s has no backups", c.Namespace, name)
	}
	a := &src.Spec.Backups.PGBackRest
	for i := range a.Repos {
		if a.Repos[i].Name != s.RepoName {
			continue
		}
		repo, err := repoConfig(fmt.Sprintf("the source's spec.backups.pgbackrest.repos[%d]", i), &a.Repos[i], a.Global)
		if err != nil {
			return nil, specError(p+".repoName", ReasonInvalidDataSource, "%v", err)
		}
		if repo.Volume != nil {
			return nil, specError(p+".repoName", ReasonInvalidDataSource, "%s of %s is a volume repository, which only its own instances mount; restore from an s3 repository", s.RepoName, name)
		}
		// The source's option files are projected into the restore
		// directory here: a CA file the source reads from its own is read
		// from there.
		if repo.S3 != nil {
			if rest, ok := strings.CutPrefix(repo.S3.CAFile, pgcontract.BackupConfDir+"/"); ok {
				repo.S3.CAFile = pgcontract.RestoreConfDir + "/" + rest
			}
		}
		return &restoreSource{
			restore:       &pgcontract.Restore{Stanza: Stanza, Repo: repo, Options: slices.Clone(s.Options)},
			configuration: a.Configuration,
		}, nil
	}
	return nil, specError(p+".repoName", ReasonDataSourceNotFound, "PostgresCluster %s/%s has no repository %q", c.Namespace, name, s.RepoName)
}

// DataInitialized says whether the cluster's data exists: its first
// primary ran (after a restore, when it was restored).
func DataInitialized(c *postgresv1beta1.PostgresCluster) bool {
	return meta.IsStatusConditionTrue(c.Status.Conditions, postgresv1beta1.ConditionDataInitialized)
}
