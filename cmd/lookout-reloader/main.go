// Command lookout-reloader writes Prometheus's configuration from the Secrets Lookout
// generates (the main configuration, --config-file, and the pieces it loads through
// scrape_config_files, --config-piece) and reloads Prometheus when one of them or a rule
// directory changes. It runs as an init container (--init-mode) and as a sidecar.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/lookout-operator/lookout/internal/reloader"
	"github.com/lookout-operator/lookout/internal/version"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	code := run(ctx, os.Args[1:], os.Stderr)
	stop()
	os.Exit(code)
}

// run returns the process exit code: 0 after init mode or a signal, 1 on failure, 2 on
// bad flags.
func run(ctx context.Context, args []string, stderr io.Writer) int {
	opts := reloader.DefaultOptions()
	flags := pflag.NewFlagSet("lookout-reloader", pflag.ContinueOnError)
	flags.SetOutput(stderr)
	opts.AddFlags(flags)
	logLevel := flags.String("log-level", "info", "Log level: debug, info, warn or error.")
	showVersion := flags.Bool("version", false, "Print the version and commit and exit.")
	if err := flags.Parse(args); err != nil {
		if err == pflag.ErrHelp {
			return 0
		}
		return 2
	}
	if *showVersion {
		// The image has no shell: this is how one checks which reloader a pod runs.
		fmt.Printf("lookout-reloader %s (commit %s)\n", version.Version, version.CommitOrUnknown())
		return 0
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		fmt.Fprintf(stderr, "--log-level: %v\n", err)
		return 2
	}
	log := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level}))
	opts.Logger = log

	if err := start(ctx, opts); err != nil {
		log.Error("Reloader failed", "err", err)
		return 1
	}
	return 0
}

func start(ctx context.Context, opts reloader.Options) error {
	if opts.InitMode {
		return reloader.RunInit(ctx, opts)
	}
	s, err := reloader.NewSidecar(opts)
	if err != nil {
		return err
	}
	return s.Run(ctx)
}
