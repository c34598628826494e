package reloader

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

func TestAnHTTPSReloadVerifiesTheCertificateUnlessToldNotTo(t *testing.T) {
	var reloads atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/-/reload" {
			reloads.Add(1)
		}
	}))
	defer srv.Close()
	url := srv.URL + "/-/reload"

	verifying := &HTTPStrategy{URL: url, Client: reloadClient(Options{})}
	if err := verifying.Reload(context.Background()); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("a reload without --reload-insecure-skip-verify = %v, want a certificate error", err)
	}
	skipping := &HTTPStrategy{URL: url, Client: reloadClient(Options{ReloadInsecureSkipVerify: true})}
	if err := skipping.Reload(context.Background()); err != nil {
		t.Fatalf("a reload with --reload-insecure-skip-verify: %v", err)
	}
	if n := reloads.Load(); n != 1 {
		t.Errorf("the server saw %d reloads, want 1", n)
	}
}
