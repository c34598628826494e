# Lookout — see README.md. Binaries for tests and the demo are built from Go
# modules under tools/ and cached in $(LOOKOUT_CACHE) (default ~/.cache/lookout).

SHELL     := /bin/bash
.SHELLFLAGS := -o pipefail -ec
GO        ?= go
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT    ?= $(shell git rev-parse HEAD 2>/dev/null)
LDFLAGS   := -X github.com/lookout-operator/lookout/internal/version.Version=$(VERSION) \
             -X github.com/lookout-operator/lookout/internal/version.Commit=$(COMMIT)
MONITORING := github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring
TEST_TIMEOUT ?= 40m

.PHONY: all build tools test unit integration manifests verify demo fmt vet clean images demo-node demo-postgres

all: build

build: ## Build lookout and lookout-reloader into bin/
	$(GO) build -ldflags '$(LDFLAGS)' -o bin/lookout ./cmd/lookout
	ln -sf lookout bin/kubectl-lookout   # with bin/ on PATH: kubectl lookout ...
	$(GO) build -ldflags '$(LDFLAGS)' -o bin/lookout-reloader ./cmd/lookout-reloader

images: ## OCI images of lookout and lookout-reloader (linux/amd64, linux/arm64), and lookout-postgres (this machine's PostgreSQL 15, its architecture only) as OCI layout tarballs in _output/images, no container engine needed
	$(GO) run ./hack/images -version '$(VERSION)' -commit '$(COMMIT)' -out _output/images

# What the demo runs; make test needs these, promtool, the older Prometheus and
# Alertmanager of the version tests, helm, the kubelet and Thanos as well.
DEMO_TOOLS := controlplane prometheus alertmanager

tools: ## Build or reuse the cached etcd, kube-apiserver, kube-controller-manager, kubectl, kubelet, Prometheus, Alertmanager, amtool, helm and Thanos; install PostgreSQL 17 (major upgrades)
	$(GO) run ./hack/tools $(DEMO_TOOLS) test-only helm node thanos postgres17

test: tools vet ## Unit, integration (real kube-apiserver) and end-to-end (real Prometheus) tests
	@hack/check-no-leftovers.sh snapshot _output/processes-before-test
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) -json ./... | $(GO) run ./hack/testsummary
	hack/check-no-leftovers.sh check _output/processes-before-test

unit: ## Only the tests that need no control plane
	$(GO) test -count=1 ./internal/... ./cmd/...

bench: tools ## Scale harness (not part of make test): cold start, change latency, RSS, CPU, API traffic; see docs/benchmarks.md
	$(GO) run ./bench -scenario all -out docs/bench-results.json $(BENCH_FLAGS)
.PHONY: bench

bench-pg: ## PostgreSQL faults (not part of make test; as root): failover time, lost writes, split brain, back to full strength, switchover pause; see docs/benchmarks.md
	$(GO) run ./bench -scenario pg $(BENCH_FLAGS)
.PHONY: bench-pg
bench-pgminor: ## Rolling minor upgrades of PostgreSQL 15 under load through the operator (as root): duration, failed transactions, lost writes; see docs/benchmarks.md
	$(GO) run ./bench -scenario pgminor $(BENCH_FLAGS)
.PHONY: bench-pgminor

manifests: ## Generate the monitoring.coreos.com CRDs into config/crd, PostgresCluster's into config/postgres/crd (and its deepcopy), then the install paths from internal/install
	$(eval CONTROLLER_GEN := $(shell $(GO) run ./hack/tools controller-gen | cut -f2))
	@test -x "$(CONTROLLER_GEN)" || { echo "manifests: no controller-gen"; exit 1; }   # resolved first: hack/tools embeds config/crd
	@rm -rf config/crd && mkdir -p config/crd
	$(CONTROLLER_GEN) crd:crdVersions=v1 \
		paths=$(MONITORING)/v1 paths=$(MONITORING)/v1alpha1 paths=$(MONITORING)/v1beta1 \
		output:crd:dir=config/crd
	@rm -rf config/postgres/crd && mkdir -p config/postgres/crd   # PGO's PostgresCluster, from Lookout's own types
	$(CONTROLLER_GEN) object paths=./api/postgres/...
	$(CONTROLLER_GEN) crd:crdVersions=v1 paths=./api/postgres/... output:crd:dir=config/postgres/crd
	$(GO) run ./hack/install   # config/default and overlays, config/lookout.yaml, charts/lookout

verify: manifests vet ## Regenerate everything and fail when the tree changed
	@if [ -n "$$(gofmt -l $$(git ls-files '*.go'))" ]; then gofmt -l $$(git ls-files '*.go'); echo "gofmt: files above need formatting"; exit 1; fi
	$(GO) mod tidy && for d in tools/*/; do (cd $$d && GOWORK=off $(GO) mod tidy); done
	@git diff --exit-code --stat -- config charts go.mod go.sum tools || { echo "verify: generated files are out of date; run 'make manifests' and 'go mod tidy' and commit"; exit 1; }
	@if [ -n "$$(git status --porcelain --untracked-files=all -- config charts)" ]; then git status --porcelain -- config charts; echo "verify: untracked generated files"; exit 1; fi
	@echo "verify: tree is clean"

demo: ## Start a local control plane with Lookout and an example, and explain how to explore it (builds only the binaries it runs)
	$(GO) run ./hack/tools $(DEMO_TOOLS) >/dev/null
	$(GO) run ./hack/demo -ldflags '$(LDFLAGS)' $(DEMO_FLAGS)   # DEMO_FLAGS=-exit: stop after the results (to time a run)

demo-postgres: ## make demo plus a 3-instance PostgresCluster (PGO's quickstart): writes through its Secret's uri, kills the primary, prints the failover time and the writes lost (0); Lookout's Prometheus scrapes the instances; then a backup to S3 and a point-in-time restore into a second cluster, with the row counts (needs postgresql-15, pgbackrest)
	$(GO) run ./hack/tools $(DEMO_TOOLS) >/dev/null
	$(GO) run ./hack/demo -ldflags '$(LDFLAGS)' -postgres $(DEMO_FLAGS)

demo-node: tools ## The operator as a Deployment from its image (kustomize base) and its Prometheus, on a real kubelet (containerd, runc, CNI bridge); see docs/real-node.md
	$(GO) run ./hack/demo-node

fmt:
	@gofmt -l -w $$(git ls-files '*.go') >/dev/null

vet:
	$(GO) vet ./...

clean:
	rm -rf bin _output
