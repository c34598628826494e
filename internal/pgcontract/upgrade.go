package pgcontract

import "time"

// AnnotationAllowUpgrade on a PostgresCluster allows a change of
// spec.postgresVersion to the major it names ("17"). PGO's annotation (there
// on the cluster a PGUpgrade names); without it Lookout refuses the change.
const AnnotationAllowUpgrade = LabelPrefix + "allow-upgrade"

// MajorFile, in DataMount, holds the major version whose data directory
// (PGDATA(major)) is the instance's once a major upgrade started the new
// server there. Without it the data directory is the one the pod names
// (--pgdata): the pod's arguments do not change with an upgrade, so no pod
// is restarted for one.
const MajorFile = "lookout-major"

// DefaultBinDirGlobs are where each major's binaries are: Debian's layout
// (/usr/lib/postgresql/<major>/bin), and Lookout's own install of majors this
// machine's distribution does not carry (hack/tools postgres17).
var DefaultBinDirGlobs = []string{"/usr/lib/postgresql/*/bin", "/opt/lookout-postgresql/lib/postgresql/*/bin"}

// MajorUpgrade asks the instances to upgrade the cluster's data from the
// major From to To: pg_upgrade --check on the primary against the running
// server, then the replicas stop, the primary shuts down, pg_upgrade --link
// moves its data to To's directory and To starts as primary; the replicas
// clone it afresh. A failure before To has started puts From back. Token is
// new for each request (the cluster's generation); an instance does not try
// one token twice.
type MajorUpgrade struct {
	From  int    `json:"from"`
	To    int    `json:"to"`
	Token string `json:"token"`
}

// Steps an instance reports in MajorUpgradeStatus.Step.
const (
	// The primary.
	UpgradeChecking    = "Checking"    // initdb of To and pg_upgrade --check against the running server
	UpgradeStopping    = "Stopping"    // waiting for the replicas to stop, then a checkpoint and a fast shutdown
	UpgradeUpgrading   = "Upgrading"   // pg_upgrade --link
	UpgradeUpgraded    = "Upgraded"    // To runs as primary (statistics are being rebuilt in the background)
	UpgradeCheckFailed = "CheckFailed" // pg_upgrade --check refused: From runs on, untouched
	UpgradeFailed      = "Failed"      // a later step failed; From runs again unless To had started
	// A replica.
	UpgradeStopped = "Stopped" // postgres stopped for the upgrade, waiting for the primary
	UpgradeCloning = "Cloning" // cloning the upgraded primary
	UpgradeCloned  = "Cloned"  // To runs as a standby; the From data is removed
)

// MajorUpgradeStatus is one instance's part in a MajorUpgrade.
type MajorUpgradeStatus struct {
	Token string `json:"token"`
	From  int    `json:"from"`
	To    int    `json:"to"`
	Step  string `json:"step"`
	// Error says what failed (CheckFailed, Failed).
	Error string `json:"error,omitempty"`
	// Downtime, on the primary: from the start of its shutdown to To
	// accepting writes. Started and Finished bound the whole upgrade.
	Downtime Duration   `json:"downtime,omitempty"`
	Started  *time.Time `json:"started,omitempty"`
	Finished *time.Time `json:"finished,omitempty"`
	// Analyzed: vacuumdb --analyze-in-stages finished on To.
	Analyzed bool `json:"analyzed,omitempty"`
}
