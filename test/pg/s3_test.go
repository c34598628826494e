package pg

import (
	"testing"

	"github.com/lookout-operator/lookout/internal/pgharness"
)

// s3Server is the harness's S3 server (gofakes3 behind TLS, with a CA of
// its own) on the host's bridge address.
type s3Server = pgharness.S3Server

func startS3(t *testing.T) *s3Server { return pgharness.StartS3(t, env.Network.HostIP) }
