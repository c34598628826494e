package postgres

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	postgresv1beta1 "github.com/lookout-operator/lookout/api/postgres/v1beta1"
	"github.com/lookout-operator/lookout/internal/pgcontract"
	"github.com/lookout-operator/lookout/internal/render/workload"
)

// Labels Lookout adds next to PGO's.
const (
	// LabelVolume tells a claim's volume: pgdata or pgwal (PGO's label name).
	LabelVolume = pgcontract.LabelPrefix + "role"
	// LabelUser marks a user Secret with its user (PGO's).
	LabelUser = pgcontract.LabelPrefix + "pguser"

	VolumeData = "pgdata"
	VolumeWAL  = "pgwal"
)

// Render computes every object of one PostgresCluster. A spec Lookout
// cannot run is a *workload.SpecError naming the field; nothing is
// rendered then, so nothing that runs is touched.
func Render(in *Inputs) (*Desired, error) {
	c := in.Cluster
	if c == nil {
		return nil, errors.New("render PostgresCluster: no cluster given")
	}
	if err := Validate(c, in.Installation); err != nil {
		return nil, err
	}
	dyn, err := dynamicConfig(c, in.Installation)
	if err != nil {
		return nil, err
	}
	upgrade, err := majorUpgrade(c)
	if err != nil {
		return nil, err
	}
	instances, all := instanceNames(in)
	target, err := checkTarget(c, all)
	if err != nil {
		return nil, err
	}
	roll, err := newMinorRollout(in, all)
	if err != nil {
		return nil, err
	}
	for i := range c.Spec.InstanceSets {
		set := &c.Spec.InstanceSets[i]
		p := fmt.Sprintf("spec.instances[%d]", i)
		if err := checkShrink(in.Claims, SetName(set, i), VolumeData, p+".dataVolumeClaimSpec", &set.DataVolumeClaimSpec); err != nil {
			return nil, err
		}
		if err := checkShrink(in.Claims, SetName(set, i), VolumeWAL, p+".walVolumeClaimSpec", set.WALVolumeClaimSpec); err != nil {
			return nil, err
		}
	}

	caCert, caKeyPEM, ca, caKey, err := clusterCA(in)
	if err != nil {
		return nil, fmt.Errorf("render PostgresCluster %s/%s: %w", c.Namespace, c.Name, err)
	}
	tlsCert, tlsKey, err := serverCert(in, ca, caKey)
	if err != nil {
		return nil, fmt.Errorf("render PostgresCluster %s/%s: %w", c.Namespace, c.Name, err)
	}

	cfg := config(in, dyn, target)
	roll.config(&cfg)
	if cfg.Backups, err = backupsConfig(c); err != nil {
		return nil, err
	}
	restore, err := restoreConfig(in)
	if err != nil {
		return nil, err
	}
	if restore != nil {
		cfg.Restore = restore.restore
	}
	cfg.InPlaceRestore = inPlaceRestore(c)
	cfg.Poolers = poolersConfig(in)
	cfg.MajorUpgrade = upgrade
	userSecrets := make([]workload.Object, 0, len(Users(c)))
	for _, u := range Users(c) {
		s, user := userSecret(in, u)
		userSecrets = append(userSecrets, s)
		cfg.Users = append(cfg.Users, user)
	}
	poolerObjs, err := poolerObjects(in, cfg.Users, ca, caKey, caCert)
	if err != nil {
		return nil, fmt.Errorf("render PostgresCluster %s/%s: %w", c.Namespace, c.Name, err)
	}
	cfgJSON, err := json.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("render PostgresCluster %s/%s: %w", c.Namespace, c.Name, err)
	}

	sa, role, binding := instanceRBAC(c, all)
	out := []workload.Object{
		sa, role, binding,
		secret(c, ClusterCASecretName(c.Name), nil, map[string][]byte{KeyCACert: caCert, KeyCAKey: caKeyPEM}),
		secret(c, ClusterCertSecretName(c.Name), nil, map[string][]byte{KeyCACert: caCert, KeyTLSCert: tlsCert, KeyTLSKey: tlsKey}),
		replicationSecret(in),
		secret(c, pgcontract.ConfigSecretName(c.Name), nil, map[string][]byte{pgcontract.ConfigKey: cfgJSON}),
	}
	out = append(out, userSecrets...)
	out = append(out, podsService(c), roleService(c, PrimaryServiceName(c.Name), pgcontract.RolePrimary, c.Spec.Service),
		roleService(c, ReplicaServiceName(c.Name), pgcontract.RoleReplica, c.Spec.ReplicaService))
	for i := range c.Spec.InstanceSets {
		set := &c.Spec.InstanceSets[i]
		for _, name := range instances[SetName(set, i)] {
			sts := statefulSet(in, set, SetName(set, i), name)
			roll.setImage(sts)
			withBackupVolumes(c, restore, sts)
			out = append(out, sts)
		}
	}
	out = append(out, backupObjects(in, all)...)
	for i := range c.Spec.InstanceSets {
		if pdb := disruptionBudget(c, &c.Spec.InstanceSets[i], SetName(&c.Spec.InstanceSets[i], i)); pdb != nil {
			out = append(out, pdb)
		}
	}
	out = append(out, poolerObjs...)
	if in.Monitoring {
		rule, err := prometheusRule(c, dyn)
		if err != nil {
			return nil, fmt.Errorf("render PostgresCluster %s/%s: %w", c.Namespace, c.Name, err)
		}
		out = append(out, podMonitor(c), rule)
	}
	return &Desired{Objects: out, Config: cfg, Instances: instances}, nil
}

// config is what the instance managers are told; Users are added by the
// caller.
func config(in *Inputs, dyn *dynamic, target string) pgcontract.Config {
	c := in.Cluster
	cfg := pgcontract.Config{
		Generation:            c.Generation,
		PostgresVersion:       c.Spec.PostgresVersion,
		Port:                  int(port(c)),
		Parameters:            dyn.parameters,
		SynchronousMode:       dyn.syncMode,
		SynchronousModeStrict: dyn.syncStrict,
		SynchronousNodeCount:  dyn.syncCount,
		MaximumLagOnFailover:  dyn.maxLag,
		LeaseDuration:         pgcontract.Duration{Duration: time.Duration(leaseSeconds(c)) * time.Second},
		Shutdown:              c.Spec.Shutdown != nil && *c.Spec.Shutdown,
	}
	if cfg.SynchronousMode && cfg.SynchronousNodeCount == 0 {
		cfg.SynchronousNodeCount = 1 // Patroni's default
	}
	// A switchover is asked for while the annotation holds a value the
	// instances have not carried out yet.
	if sw := switchover(c); sw != nil && sw.Enabled {
		trigger := c.Annotations[pgcontract.AnnotationTriggerSwitchover]
		done := c.Status.Patroni.Switchover
		if trigger != "" && (done == nil || *done != trigger) {
			typ := sw.Type
			if typ == "" {
				typ = postgresv1beta1.SwitchoverTypeSwitchover
			}
			cfg.Switchover = &pgcontract.Switchover{Trigger: trigger, Target: target, Type: typ}
		}
	}
	// A rolling restart steps aside while a switchover the user asked for
	// is carried out.
	if restart, sw := rollingRestart(c); cfg.Switchover == nil {
		cfg.Restart, cfg.Switchover = restart, sw
	}
	return cfg
}

func port(c *postgresv1beta1.PostgresCluster) int32 {
	if c.Spec.Port == nil {
		return DefaultPort
	}
	return *c.Spec.Port
}

func leaseSeconds(c *postgresv1beta1.PostgresCluster) int32 {
	if c.Spec.Patroni == nil || c.Spec.Patroni.LeaderLeaseDurationSeconds == nil {
		return DefaultLeaseSeconds
	}
	return *c.Spec.Patroni.LeaderLeaseDurationSeconds
}

// instanceAlphabet is the one PGO's instance names take their 4 characters
// from (no vowels: no words).
const instanceAlphabet = "bcdfghjklmnpqrstvwxz2456789"

// instanceNames names the instances of each set: the StatefulSets that exist
// are kept (the primary first when a set shrinks), new ones get
// <cluster>-<set>-<4 characters>. all lists every instance, sorted.
func instanceNames(in *Inputs) (bySet map[string][]string, all []string) {
	c := in.Cluster
	taken := map[string]bool{}
	existing := map[string][]string{}
	for _, sts := range in.StatefulSets {
		set := sts.Labels[pgcontract.LabelInstanceSet]
		existing[set] = append(existing[set], sts.Name)
		taken[sts.Name] = true
	}
	bySet = map[string][]string{}
	for i := range c.Spec.InstanceSets {
		set := &c.Spec.InstanceSets[i]
		name := SetName(set, i)
		have := existing[name]
		slices.Sort(have)
		// The primary stays when the set shrinks: scaling down never costs a failover.
		slices.SortStableFunc(have, func(a, b string) int {
			switch {
			case a == in.Primary && b != in.Primary:
				return -1
			case b == in.Primary && a != in.Primary:
				return 1
			}
			return 0
		})
		want := int(replicas(set))
		names := slices.Clone(have[:min(want, len(have))])
		r := rand.New(source(in.Seed, "instances/"+name))
		for len(names) < want {
			b := make([]byte, 4)
			for j := range b {
				b[j] = instanceAlphabet[r.IntN(len(instanceAlphabet))]
			}
			n := c.Name + "-" + name + "-" + string(b)
			if !taken[n] {
				taken[n] = true
				names = append(names, n)
			}
		}
		slices.Sort(names)
		bySet[name] = names
		all = append(all, names...)
	}
	slices.Sort(all)
	return bySet, all
}

// ownedMeta is the metadata of an object of cluster c: the cluster label
// (by which the controller finds and prunes what it owns) and a controller
// reference to c.
func ownedMeta(c *postgresv1beta1.PostgresCluster, name string, labels map[string]string) metav1.ObjectMeta {
	l := map[string]string{
		pgcontract.LabelCluster:        c.Name,
		"app.kubernetes.io/managed-by": "lookout",
	}
	for k, v := range labels {
		l[k] = v
	}
	return metav1.ObjectMeta{
		Name:      name,
		Namespace: c.Namespace,
		Labels:    l,
		OwnerReferences: []metav1.OwnerReference{{
			APIVersion: postgresv1beta1.GroupVersion.String(), Kind: postgresv1beta1.Kind,
			Name: c.Name, UID: c.UID, Controller: workload.Ptr(true), BlockOwnerDeletion: workload.Ptr(true),
		}},
	}
}

func secret(c *postgresv1beta1.PostgresCluster, name string, labels map[string]string, data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: ownedMeta(c, name, labels),
		Type:       corev1.SecretTypeOpaque,
		Data:       data,
	}
}

// replicationSecret holds the password of the replication user, kept once
// generated.
func replicationSecret(in *Inputs) *corev1.Secret {
	c := in.Cluster
	name := ReplicationSecretName(c.Name)
	var existing map[string][]byte
	if s := in.Secrets[name]; s != nil {
		existing = map[string][]byte{KeyPassword: s.Data[pgcontract.ReplicationPasswordFile]}
	}
	password, _ := credential(in.Seed, existing, pgcontract.ReplicationUser, false)
	return secret(c, name, nil, map[string][]byte{pgcontract.ReplicationPasswordFile: []byte(password)})
}

// userSecret is the Secret of one user, with PGO's keys, and the user as the
// instance managers create it.
func userSecret(in *Inputs, u postgresv1beta1.PostgresUserSpec) (*corev1.Secret, pgcontract.User) {
	c := in.Cluster
	name := UserSecretName(c.Name, u.Name)
	var existing map[string][]byte
	if s := in.Secrets[name]; s != nil {
		existing = s.Data
	}
	ascii := u.Password == nil || u.Password.Type != postgresv1beta1.PasswordTypeAlphaNumeric
	password, verifier := credential(in.Seed, existing, "user/"+u.Name, ascii)
	host := PrimaryServiceName(c.Name) + "." + c.Namespace + ".svc"
	p := strconv.Itoa(int(port(c)))
	data := map[string][]byte{
		KeyUser:     []byte(u.Name),
		KeyPassword: []byte(password),
		KeyHost:     []byte(host),
		KeyPort:     []byte(p),
		KeyVerifier: []byte(verifier),
	}
	uri := "postgresql://" + urlUserInfo(u.Name, password) + "@" + host + ":" + p
	jdbc := "jdbc:postgresql://" + host + ":" + p + "/"
	if len(u.Databases) > 0 {
		db := u.Databases[0]
		data[KeyDBName] = []byte(db)
		uri += "/" + urlPathEscape(db)
		jdbc += urlPathEscape(db)
	}
	jdbc += "?password=" + urlQueryEscape(password) + "&user=" + urlQueryEscape(u.Name)
	data[KeyURI] = []byte(uri)
	data[KeyJDBCURI] = []byte(jdbc)
	addPoolerKeys(c, data, u, password)
	return secret(c, name, map[string]string{LabelUser: u.Name}, data),
		pgcontract.User{Name: u.Name, Databases: slices.Clone(u.Databases), Options: u.Options, Verifier: verifier}
}
