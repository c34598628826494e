// Package pg tests the PostgreSQL instance manager (`lookout instance`)
// against real PostgreSQL 15 servers and a real kube-apiserver, through
// internal/pgharness: each instance is a manager process in a network
// namespace of its own (a pod with a real address), with a Pod object the
// harness creates, since no kubelet runs. Faults are real: SIGKILL and
// SIGSTOP of every process of an instance, its pod deleted, its network
// cut. A writer logs every write's outcome and the tests compare the log
// with the table after each fault.
package pg

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"

	"github.com/lookout-operator/lookout/internal/pgbouncer"
	"github.com/lookout-operator/lookout/internal/pgcontract"
	"github.com/lookout-operator/lookout/internal/pgharness"
	"github.com/lookout-operator/lookout/internal/pginstance"
)

const instanceEnv = "LOOKOUT_PG_TEST_INSTANCE"

var (
	env       *pgharness.Env
	clientset kubernetes.Interface
)

func TestMain(m *testing.M) {
	// Re-executed as an instance manager inside a network namespace.
	if os.Getenv(instanceEnv) != "" {
		root := &cobra.Command{Use: "lookout", SilenceUsage: true}
		root.AddCommand(pginstance.NewCommand(), pginstance.NewBackupCommand(), pgbouncer.NewCommand())
		root.SetArgs(os.Args[1:])
		if err := root.Execute(); err != nil {
			fmt.Fprintln(os.Stderr, "Error:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	env, err = pgharness.Start(context.Background(), os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "test/pg:", err)
		return 1
	}
	defer env.Close()
	clientset = env.Clientset
	return m.Run()
}

// newCluster starts n instance managers (this test binary, re-executed);
// prepare runs before the first starts.
func newCluster(t *testing.T, n int, cfg pgcontract.Config, prepare ...func(*pgharness.Cluster)) *pgharness.Cluster {
	t.Helper()
	self, err := os.Executable()
	must(t, err)
	return pgharness.NewCluster(t, env, pgharness.Command{Path: self, Env: []string{instanceEnv + "=1"}}, n, cfg, prepare...)
}

func must(t pgharness.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%v", err)
	}
}
