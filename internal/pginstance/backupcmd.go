package pginstance

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/lookout-operator/lookout/internal/pgcontract"
)

// NewBackupCommand is `lookout backup`, what a backup Job runs: it finds the
// cluster's primary through its Lease and has its instance manager run the
// backup, and exits non-zero when the backup failed (the Job retries).
func NewBackupCommand() *cobra.Command {
	var cluster, namespace, repo, typ, kubeconfig string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "backup",
		Short: "Take a pgBackRest backup of a PostgresCluster on its primary (what a backup Job runs)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if namespace == "" {
				namespace = os.Getenv(pgcontract.EnvPodNamespace)
			}
			var rc *rest.Config
			var err error
			if kubeconfig != "" {
				rc, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
			} else {
				rc, err = rest.InClusterConfig()
			}
			if err != nil {
				return fmt.Errorf("kubernetes client config: %w", err)
			}
			cs, err := kubernetes.NewForConfig(rc)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			url, err := primaryURL(ctx, cs, namespace, cluster)
			if err != nil {
				return err
			}
			res, err := RequestBackup(ctx, url, pgcontract.BackupRequest{Repo: repo, Type: typ})
			if err != nil {
				return err
			}
			return json.NewEncoder(cmd.OutOrStdout()).Encode(res)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cluster, "cluster", "", "the PostgresCluster")
	f.StringVar(&namespace, "namespace", "", "its namespace (default $"+pgcontract.EnvPodNamespace+")")
	f.StringVar(&repo, "repo", "repo1", "the repository (repo1 … repo4)")
	f.StringVar(&typ, "type", pgcontract.BackupFull, "full, diff or incr")
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig file (default: in-cluster)")
	f.DurationVar(&timeout, "timeout", 6*time.Hour, "give up after this long")
	_ = cmd.MarkFlagRequired("cluster")
	return cmd
}

// primaryURL is the instance manager of the Lease's holder.
func primaryURL(ctx context.Context, cs kubernetes.Interface, namespace, cluster string) (string, error) {
	l, err := cs.CoordinationV1().Leases(namespace).Get(ctx, pgcontract.LeaseName(cluster), metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("find the primary of %s/%s: %w", namespace, cluster, err)
	}
	h := holder(l)
	if h == "" {
		return "", fmt.Errorf("PostgresCluster %s/%s has no primary now", namespace, cluster)
	}
	pod, err := cs.CoreV1().Pods(namespace).Get(ctx, h, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("the primary's pod: %w", err)
	}
	if pod.Status.PodIP == "" {
		return "", fmt.Errorf("the primary's pod %s has no address", h)
	}
	return "http://" + net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(pgcontract.ManagerPort)), nil
}
