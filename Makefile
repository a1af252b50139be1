# Image URL to use all building/pushing image targets.
IMG ?= controller:latest

# The release version of the manager image and of the kubectl payments plugin:
# the chart's appVersion (dist/chart/Chart.yaml), which a release sets.
VERSION ?= $(shell sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}.*/\1/p' dist/chart/Chart.yaml)

# Kubernetes version of the local control plane (kube-apiserver,
# kube-controller-manager, kubectl) and the etcd version it runs on. Both are
# built from Go modules by hack/envtest.
ENVTEST_K8S_VERSION ?= 1.37.2
ENVTEST_ETCD_VERSION ?= 3.6.16

# Get the currently used golang install path (in GOPATH/bin, unless GOBIN is set).
ifeq (,$(shell go env GOBIN))
GOBIN=$(shell go env GOPATH)/bin
else
GOBIN=$(shell go env GOBIN)
endif
GOOS ?= $(shell go env GOOS)
GOARCH ?= $(shell go env GOARCH)

# CONTAINER_TOOL defines the container tool to be used for building images.
CONTAINER_TOOL ?= docker

# Setting SHELL to bash allows bash commands to be executed by recipes.
# Options are set to exit when a recipe line exits non-zero or a piped command fails.
SHELL = /usr/bin/env bash -o pipefail
.SHELLFLAGS = -ec

# Test parallelism sized for small machines: packages and tests in parallel.
TEST_P ?= 2
TEST_FLAGS ?= -v -race -count=1

.PHONY: all
all: build

##@ General

# The help target prints out all targets with their descriptions organized
# beneath their categories. The categories are represented by '##@' and the
# target descriptions by '##'.
.PHONY: help
help: ## Display this help.
	@awk 'BEGIN {FS = ":.*##"; printf "\nUsage:\n  make \033[36m<target>\033[0m\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) } ' $(MAKEFILE_LIST)

##@ Development

.PHONY: manifests
manifests: controller-gen ## Generate CRDs and RBAC ClusterRole from the markers; copy the CRDs into the envtest kit.
	$(CONTROLLER_GEN) rbac:roleName=manager-role paths="./..."
	@# The API types are a module of their own (api/go.mod), which ./... of the operator's module does not match.
	cd api && $(CONTROLLER_GEN) crd paths="./..." output:crd:artifacts:config=../config/crd/bases
	@# pkg/paymentjobtest embeds the same CRDs, so users need no path to config/ (make verify catches drift).
	rm -f pkg/paymentjobtest/crds/*.yaml && mkdir -p pkg/paymentjobtest/crds && cp config/crd/bases/*.yaml pkg/paymentjobtest/crds/

.PHONY: generate
generate: controller-gen ## Generate DeepCopy methods from the API types.
	cd api && $(CONTROLLER_GEN) object:headerFile="../hack/boilerplate.go.txt" paths="./..."

.PHONY: fmt
fmt: ## Run go fmt against the code (the operator's module and api/'s).
	go fmt ./...
	cd api && go fmt ./...

.PHONY: vet
vet: ## Run go vet against the code (the operator's module and api/'s).
	go vet ./...
	cd api && go vet ./...

.PHONY: lint
lint: golangci-lint ## Run golangci-lint with .golangci.yml (make verify runs it too).
	$(GOLANGCI_LINT) run
	cd api && $(GOLANGCI_LINT) run ./...
	cd test/helm && $(GOLANGCI_LINT) run ./...

.PHONY: lint-fix
lint-fix: golangci-lint ## Run golangci-lint and apply the fixes it can make.
	$(GOLANGCI_LINT) run --fix

.PHONY: lint-config
lint-config: golangci-lint ## Check .golangci.yml against golangci-lint's schema.
	$(GOLANGCI_LINT) config verify

.PHONY: tidy
tidy: ## Run go mod tidy on the operator, the API types, the control plane tools, the chart tests and the example modules.
	go mod tidy
	cd api && go mod tidy
	cd $(ENVTEST_MODULE) && go mod tidy
	cd $(ENVTEST_MODULE)/etcd && go mod tidy
	cd $(ENVTEST_MODULE)/etcdutl && go mod tidy
	cd test/helm && go mod tidy
	cd examples/billing && go mod tidy

.PHONY: test
test: manifests generate fmt vet envtest-assets build-sandbox build-plugin build-installer ## Run unit and envtest tests against the self-built control plane.
	KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" SANDBOX_BIN="$(LOCALBIN)/sandbox" KUBECTL_PAYMENTS="$(LOCALBIN)/kubectl-payments" PLUGIN_VERSION="$(VERSION)" KUSTOMIZE="$(KUSTOMIZE)" \
		INSTALLER="$(abspath dist/install.yaml)" go test -p $(TEST_P) $(TEST_FLAGS) ./...
	@# The API types' module (api/go.mod): ./... above does not match it. Its tests need no control plane
	@# (the CRDs' contract against an API server is test/api, in the operator's module).
	cd api && go test $(TEST_FLAGS) ./...

# TEETH_PACKAGES are the packages whose tests switch on the deliberately
# broken variants of the protocol (internal/teeth): the protocol tables' teeth;
# a campaign's package joins them with its own teeth test.
TEETH_PACKAGES ?= ./internal/teeth/... ./internal/controllers/protocol/... ./internal/campaign/...

.PHONY: test-teeth
test-teeth: ## Show the tests have teeth: build with the campaignteeth tag, switch each broken variant of the protocol on, and expect the books to disagree.
	go test -tags campaignteeth -count=1 -run 'Teeth|Break' $(TEETH_PACKAGES)

.PHONY: test-examples
test-examples: envtest-assets ## Test examples/billing from its own module, as a user of pkg/paymentjobtest would.
	cd examples/billing && KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" go test -count=1 ./...

.PHONY: test-installer
test-installer: build-installer build-plugin ## Render dist/install.yaml and check its security settings, and package a release archive of the plugin and its Krew manifest.
	KUSTOMIZE="$(KUSTOMIZE)" INSTALLER="$(abspath dist/install.yaml)" KUBECTL_PAYMENTS="$(LOCALBIN)/kubectl-payments" PLUGIN_VERSION="$(VERSION)" \
		go test -count=1 -v ./test/manifests/...

.PHONY: test-e2e
test-e2e: envtest-assets build build-previous-manager ## Chaos suite: real manager and sandbox processes, kill -9, split brain, faults, API server restart, an upgrade and a rollback with claims in flight, the ledger on PostgreSQL (needs Debian's postgresql-15), and 90 seconds of the process campaign (60 s on the CRD ledger, 30 s on PostgreSQL).
	KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" MANAGER_BIN="$(LOCALBIN)/manager" SANDBOX_BIN="$(LOCALBIN)/sandbox" \
		PREVIOUS_MANAGER_BIN="$(LOCALBIN)/manager-previous" \
		go test -tags e2e -count=1 -v -timeout 30m ./test/e2e/...

# DURATION bounds make campaign and make campaign-inprocess (a Go duration);
# SEED, when set, replays the one history of that seed (-rapid.seed, printed on
# a failure) and no other. LEDGER, given on make campaign's command line,
# picks the managers' outcome ledger: crd, postgres (on a control plane of
# its own; needs Debian's postgresql-15) or both, the default (DURATION
# shared 2:1, crd first). make demo's default of LEDGER (crd, below) is not
# the campaign's.
DURATION ?= 10m
SEED ?=
CAMPAIGN_LEDGER = $(if $(filter command line,$(origin LEDGER)),$(LEDGER),both)
CAMPAIGN_SEED_FLAG = $(if $(SEED),-rapid.seed=$(SEED) -rapid.checks=1,)

.PHONY: campaign
campaign: envtest-assets build ## Process campaign for DURATION (default 10m): histories of users' actions, kill -9 of two managers without leader election and sandbox faults over real processes, the books checked after every step, the ledger on crd, postgres or both (LEDGER=, default both); SEED= replays one.
	KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" MANAGER_BIN="$(LOCALBIN)/manager" SANDBOX_BIN="$(LOCALBIN)/sandbox" \
		CAMPAIGN_DURATION="$(DURATION)" CAMPAIGN_LEDGER="$(CAMPAIGN_LEDGER)" \
		go test -tags e2e -count=1 -v -timeout 0 -run '^TestProcessCampaign$$' ./test/e2e/ -args $(CAMPAIGN_SEED_FLAG)

.PHONY: campaign-inprocess
campaign-inprocess: ## In-process campaign (internal/campaign TestCampaign) for DURATION (default 10m) instead of its CI budget; SEED= replays one.
	CAMPAIGN_DURATION="$(DURATION)" go test -count=1 -v -timeout 0 -run '^TestCampaign$$' ./internal/campaign/ -args $(CAMPAIGN_SEED_FLAG)

.PHONY: build-previous-manager
build-previous-manager: ## Build the manager of the previous release (the commit in hack/upgrade-from) into bin/manager-previous.
	bash hack/build-previous-manager.sh "$(LOCALBIN)/manager-previous"

# BENCH_JSON names a file for every figure of make bench as flat JSON;
# BENCH_ARGS passes more flags, e.g. BENCH_ARGS="-jobs 1000".
BENCH_JSON ?=
BENCH_ARGS ?=

.PHONY: bench
bench: envtest-assets build ## Benchmark throughput vs. a writes-only baseline, API requests per job, memory and startup; appends to docs/benchmarks.md.
	KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" go run ./test/bench -manager "$(LOCALBIN)/manager" -sandbox "$(LOCALBIN)/sandbox" \
		-json "$(BENCH_JSON)" $(BENCH_ARGS)

.PHONY: bench-micro
bench-micro: envtest-assets ## Micro-benchmarks of the hot pure functions (key derivation, request hash, conditions), with allocations.
	KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" go test -run '^$$' -bench . -benchmem ./internal/payment/ ./internal/controllers/engine/

FUZZTIME ?= 60s

.PHONY: fuzz
fuzz: ## Run each fuzz target (key derivation, request fingerprint) for FUZZTIME (60s).
	go test -run '^$$' -fuzz '^FuzzSentKey$$' -fuzztime $(FUZZTIME) ./internal/payment/
	go test -run '^$$' -fuzz '^FuzzRequestHash$$' -fuzztime $(FUZZTIME) ./internal/payment/

.PHONY: test-conformance
test-conformance: stripe-mock ## Prove every request of the Stripe adapter passes stripe-mock's OpenAPI validation.
	STRIPE_MOCK="$(STRIPE_MOCK)" go test -tags conformance -count=1 -v -run Conformance ./internal/payment/stripe/...

.PHONY: test-postgres
test-postgres: envtest-assets build-plugin build-sandbox ## Run the PostgreSQL suites (the PostgreSQL ledger, the server harness, the operator on it under envtest, make run-local LEDGER=postgres) on servers they start; needs Debian's postgresql-15.
	KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" go test -tags postgres -count=1 -p 1 ./internal/testing/pgserver/... ./internal/ledger/pgledger/... \
		./internal/ledger/ledgercopy/... ./internal/controllers/pgledger/...
	@# kubectl payments reads an operator's ledger on PostgreSQL (its other tests run in make test).
	KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" KUBECTL_PAYMENTS="$(LOCALBIN)/kubectl-payments" go test -tags postgres -count=1 -run 'OnPostgres' ./internal/cli/
	@# pkg/operator's other tests run in make test; here only the start on PostgreSQL.
	KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" go test -tags postgres -count=1 -run 'OnPostgres' ./pkg/operator/
	@# make run-local LEDGER=postgres, as a user runs it (about 30 s): bin/manager, bin/sandbox and the plugin
	@# on a local control plane, the environment outliving its manager (hack/localenv).
	go build -o $(LOCALBIN)/manager ./cmd
	KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" go test -tags postgres -count=1 -run 'OnPostgres' ./hack/localenv/

.PHONY: verify
verify: manifests generate fmt tidy lint-config lint helm-chart ## Regenerate code, manifests and go.sum, lint, and fail if the tree changed.
	@if [ -n "$$(git status --porcelain)" ]; then \
		echo "The tree is not clean after regenerating; commit these changes:"; \
		git status --porcelain; git --no-pager diff --stat; exit 1; \
	fi

##@ Run locally

# The manager's outcome ledger in make demo and make run-local: crd, or
# postgres (a local PostgreSQL server of Debian's postgresql-15, started and
# removed with the environment; docs/postgres-ledger.md, "Try it locally").
LEDGER ?= crd
# Flags passed to the manager of make demo and make run-local, after its
# local defaults (the last of a flag given twice wins), e.g.
# MANAGER_ARGS="--max-concurrent-reconciles=2 --zap-log-level=debug".
MANAGER_ARGS ?=
# NO_MANAGER=1: make run-local starts everything but the manager and prints
# the command that starts one.
NO_MANAGER ?=

.PHONY: demo
demo: build envtest-assets ## Run the operator on a local control plane with the sandbox, apply config/samples, show the results, stop (LEDGER=postgres, MANAGER_ARGS="...").
	go build -o $(LOCALBIN)/localenv ./hack/localenv
	$(LOCALBIN)/localenv --demo --assets "$(ENVTEST_ASSETS)" --ledger=$(LEDGER) -- $(MANAGER_ARGS)

.PHONY: run-local
run-local: build envtest-assets ## Like demo, but stay up until Ctrl-C and print the export lines for kubectl and the plugin; the environment outlives its manager (LEDGER=postgres, MANAGER_ARGS="...", NO_MANAGER=1).
	go build -o $(LOCALBIN)/localenv ./hack/localenv
	$(LOCALBIN)/localenv --assets "$(ENVTEST_ASSETS)" --ledger=$(LEDGER) $(if $(NO_MANAGER),--no-manager) -- $(MANAGER_ARGS)

##@ Build

.PHONY: build
build: manifests generate fmt vet build-sandbox build-plugin ## Build the manager, sandbox and kubectl-payments binaries.
	go build -o $(LOCALBIN)/manager ./cmd

.PHONY: build-plugin
build-plugin: ## Build the kubectl payments plugin into bin/kubectl-payments (put bin/ on PATH for kubectl to find it).
	go build -ldflags "-X main.version=$(VERSION)" -o $(LOCALBIN)/kubectl-payments ./cmd/kubectl-payments

# RELEASE_PLATFORMS are the os/arch pairs release-plugin builds.
RELEASE_PLATFORMS ?= linux/amd64,linux/arm64,darwin/amd64,darwin/arm64

.PHONY: release-plugin
release-plugin: ## Cross-build kubectl-payments archives, checksums.txt and the Krew manifest payments.yaml into dist/release (no network).
	go run ./hack/release-plugin -version "$(VERSION)" -platforms "$(RELEASE_PLATFORMS)" -out dist/release

.PHONY: build-sandbox
build-sandbox: ## Build the payment sandbox server (Stripe-compatible subset) into bin/sandbox.
	go build -o $(LOCALBIN)/sandbox ./cmd/sandbox

.PHONY: run
run: manifests generate fmt vet ## Run the manager against the cluster of the current kubeconfig.
	go run ./cmd

.PHONY: docker-build
docker-build: ## Build the manager image, which carries /kubectl-payments too (needs a container engine).
	$(CONTAINER_TOOL) build --build-arg VERSION=$(VERSION) -t ${IMG} .

.PHONY: docker-push
docker-push: ## Push the manager image.
	$(CONTAINER_TOOL) push ${IMG}

.PHONY: build-installer
build-installer: manifests generate kustomize ## Render CRDs and deployment into dist/install.yaml.
	mkdir -p dist
	cd config/manager && $(KUSTOMIZE) edit set image controller=${IMG}
	$(KUSTOMIZE) build config/default > dist/install.yaml

##@ Deployment

ifndef ignore-not-found
  ignore-not-found = false
endif

.PHONY: install
install: manifests kustomize ## Install the CRDs and the admission policies (config/policy) into the cluster of the current kubeconfig.
	$(KUSTOMIZE) build config/crd | $(KUBECTL) apply -f -
	$(KUSTOMIZE) build config/policy | $(KUBECTL) apply -f -

.PHONY: install-crds
install-crds: manifests kustomize ## Install the CRDs only, without the admission policies (docs/security.md says what is lost).
	$(KUSTOMIZE) build config/crd | $(KUBECTL) apply -f -

.PHONY: uninstall
uninstall: manifests kustomize ## Uninstall the admission policies and the CRDs. Call with ignore-not-found=true to ignore missing resources.
	$(KUSTOMIZE) build config/policy | $(KUBECTL) delete --ignore-not-found=$(ignore-not-found) -f -
	$(KUSTOMIZE) build config/crd | $(KUBECTL) delete --ignore-not-found=$(ignore-not-found) -f -

.PHONY: deploy
deploy: manifests kustomize ## Deploy the manager to the cluster of the current kubeconfig.
	cd config/manager && $(KUSTOMIZE) edit set image controller=${IMG}
	$(KUSTOMIZE) build config/default | $(KUBECTL) apply -f -

.PHONY: undeploy
undeploy: kustomize ## Undeploy the manager. Call with ignore-not-found=true to ignore missing resources.
	$(KUSTOMIZE) build config/default | $(KUBECTL) delete --ignore-not-found=$(ignore-not-found) -f -

##@ Helm chart

HELM_CHART_DIR := dist/chart
# The plugin's input: config/helm, which is config/default with the admission
# policy bindings renamed (see config/helm/kustomization.yaml).
HELM_CHART_INPUT := dist/chart-input.yaml
HELM_RELEASE ?= paymentjob-operator
HELM_NAMESPACE ?= paymentjob-operator-system
HELM_EXTRA_ARGS ?=
HELM_CHART_VERSION = $(shell sed -n 's/^version: *//p' $(HELM_CHART_DIR)/Chart.yaml)
HELM_PACKAGE = dist/paymentjob-operator-$(HELM_CHART_VERSION).tgz

.PHONY: helm-chart
helm-chart: manifests generate kustomize kubebuilder ## Regenerate dist/chart from the kustomize config with kubebuilder's helm/v2-alpha plugin.
	mkdir -p dist
	cd config/manager && $(KUSTOMIZE) edit set image controller=${IMG}
	$(KUSTOMIZE) build config/helm > $(HELM_CHART_INPUT)
	@# The templates the plugin generates from the input are removed first, so
	@# that an object removed from config/ leaves the chart too. Chart.yaml,
	@# values.yaml, values.schema.json, NOTES.txt, _helpers.tpl, _operator.tpl,
	@# validate.yaml and the templates under availability/, events/,
	@# monitoring/, network-policy/ and prometheus/ are written by hand.
	rm -rf $(addprefix $(HELM_CHART_DIR)/templates/,crd rbac manager metrics extras)
	@# The plugin also appends helm-deploy targets that install an unpinned Helm
	@# with curl; the ones above use bin/helm, so the Makefile is put back.
	cp Makefile dist/Makefile.orig; status=0; \
		$(KUBEBUILDER) edit --plugins=helm/v2-alpha --manifests=$(HELM_CHART_INPUT) || status=$$?; \
		mv dist/Makefile.orig Makefile; exit $$status
	@# One source for the alerts and the dashboard: config/; templates read these copies.
	mkdir -p $(HELM_CHART_DIR)/files
	cp config/prometheus/alerts.yaml config/grafana/paymentjob-dashboard.json $(HELM_CHART_DIR)/files/
	@# The plugin adds a GitHub workflow that needs kind when it is missing; CI here is .ci/run.
	rm -f .github/workflows/test-chart.yml
	-rmdir .github/workflows .github 2>/dev/null

.PHONY: helm-lint
helm-lint: helm ## Lint dist/chart (strict) with its defaults and with every value set.
	$(HELM) lint --strict $(HELM_CHART_DIR)
	$(HELM) lint --strict $(HELM_CHART_DIR) --values test/helm/testdata/every-value.yaml

.PHONY: helm-test
helm-test: envtest-assets build build-installer helm-package ## Chart tests (test/helm, Helm SDK): render, schema, server-side dry run, the manager on the chart's arguments, equal security and RBAC to dist/install.yaml.
	cd test/helm && KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" INSTALLER="$(abspath dist/install.yaml)" \
		CHART="$(abspath $(HELM_CHART_DIR))" CHART_PACKAGE="$(abspath $(HELM_PACKAGE))" MANAGER_BIN="$(LOCALBIN)/manager" \
		go test -count=1 -v ./...

.PHONY: helm-package
helm-package: helm ## Package dist/chart into dist/paymentjob-operator-<version>.tgz.
	$(HELM) package $(HELM_CHART_DIR) --destination dist
	@echo "Wrote $(HELM_PACKAGE)"

.PHONY: helm-deploy
helm-deploy: helm ## Install or upgrade the chart in the cluster of the current kubeconfig. Specify an image with IMG.
	@# The namespace enforces the restricted Pod Security profile, as config/default's does.
	$(KUBECTL) get namespace $(HELM_NAMESPACE) >/dev/null 2>&1 || $(KUBECTL) create namespace $(HELM_NAMESPACE)
	$(KUBECTL) label namespace $(HELM_NAMESPACE) pod-security.kubernetes.io/enforce=restricted --overwrite
	IMG="$(IMG)"; $(HELM) upgrade --install $(HELM_RELEASE) $(HELM_CHART_DIR) \
		--namespace $(HELM_NAMESPACE) \
		--set manager.image.repository=$${IMG%:*} --set manager.image.tag=$${IMG##*:} \
		--wait --timeout 5m $(HELM_EXTRA_ARGS)

.PHONY: helm-uninstall
helm-uninstall: helm ## Uninstall the Helm release (the CRDs, every PaymentJob and the ledger stay).
	$(HELM) uninstall $(HELM_RELEASE) --namespace $(HELM_NAMESPACE)

.PHONY: helm-status
helm-status: helm ## Show the Helm release's status.
	$(HELM) status $(HELM_RELEASE) --namespace $(HELM_NAMESPACE)

.PHONY: helm-history
helm-history: helm ## Show the Helm release's history.
	$(HELM) history $(HELM_RELEASE) --namespace $(HELM_NAMESPACE)

.PHONY: helm-rollback
helm-rollback: helm ## Roll the Helm release back to its previous revision.
	$(HELM) rollback $(HELM_RELEASE) --namespace $(HELM_NAMESPACE)

##@ Dependencies

## Location to install dependencies to.
LOCALBIN ?= $(shell pwd)/bin
$(LOCALBIN):
	mkdir -p $(LOCALBIN)

## Tool binaries.
## kubectl: the one on PATH, or the self-built one from bin/k8s.
KUBECTL ?= $(shell command -v kubectl 2>/dev/null || echo $(ENVTEST_ASSETS)/kubectl)
KUSTOMIZE ?= $(LOCALBIN)/kustomize
CONTROLLER_GEN ?= $(LOCALBIN)/controller-gen
STRIPE_MOCK ?= $(LOCALBIN)/stripe-mock
GOLANGCI_LINT ?= $(LOCALBIN)/golangci-lint
KUBEBUILDER ?= $(LOCALBIN)/kubebuilder
HELM ?= $(LOCALBIN)/helm

## Tool versions.
KUSTOMIZE_VERSION ?= v5.8.1
CONTROLLER_TOOLS_VERSION ?= v0.23.0
STRIPE_MOCK_VERSION ?= v0.203.0
GOLANGCI_LINT_VERSION ?= v2.15.0
# kubebuilder's helm/v2-alpha plugin generates dist/chart; the Helm CLI lints
# and packages it. The chart tests (test/helm) pin the Helm SDK in their own
# go.mod: keep both on the same Helm release.
KUBEBUILDER_VERSION ?= v4.16.0
HELM_VERSION ?= v4.3.2

## The local control plane: kube-apiserver, kube-controller-manager (namespace
## deletion and garbage collection in the e2e suite) and kubectl from
## k8s.io/kubernetes, etcd from go.etcd.io/etcd/server/v3. Built once; skipped
## when present.
ENVTEST_MODULE := hack/envtest
ENVTEST_ASSETS ?= $(LOCALBIN)/k8s/$(ENVTEST_K8S_VERSION)-$(GOOS)-$(GOARCH)
ENVTEST_K8S_MINOR = $(word 2,$(subst ., ,$(ENVTEST_K8S_VERSION)))
ENVTEST_K8S_LDFLAGS = -s -w \
	-X k8s.io/component-base/version.gitVersion=v$(ENVTEST_K8S_VERSION) \
	-X k8s.io/component-base/version.gitMajor=1 \
	-X k8s.io/component-base/version.gitMinor=$(ENVTEST_K8S_MINOR) \
	-X k8s.io/component-base/version.gitTreeState=clean \
	-X k8s.io/client-go/pkg/version.gitVersion=v$(ENVTEST_K8S_VERSION) \
	-X k8s.io/client-go/pkg/version.gitMajor=1 \
	-X k8s.io/client-go/pkg/version.gitMinor=$(ENVTEST_K8S_MINOR)

.PHONY: envtest-assets
envtest-assets: $(ENVTEST_ASSETS)/kube-apiserver $(ENVTEST_ASSETS)/kube-controller-manager $(ENVTEST_ASSETS)/etcd $(ENVTEST_ASSETS)/etcdutl $(ENVTEST_ASSETS)/kubectl ## Build kube-apiserver, kube-controller-manager, etcd, etcdutl and kubectl into bin/k8s (only when missing).

# kube-apiserver, kube-controller-manager and kubectl in one go build: it
# compiles the packages they share once and links each while it compiles
# the others' (three builds one after the other left a core idle during each
# link).
$(ENVTEST_ASSETS)/kube-apiserver $(ENVTEST_ASSETS)/kube-controller-manager $(ENVTEST_ASSETS)/kubectl &:
	@echo "Building kube-apiserver, kube-controller-manager and kubectl v$(ENVTEST_K8S_VERSION) from Go modules (a few minutes, once)"
	mkdir -p $(ENVTEST_ASSETS)
	cd $(ENVTEST_MODULE) && GOOS=$(GOOS) GOARCH=$(GOARCH) CGO_ENABLED=0 go build -trimpath \
		-ldflags "$(ENVTEST_K8S_LDFLAGS)" -o $(ENVTEST_ASSETS)/ \
		k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kubectl

$(ENVTEST_ASSETS)/etcd:
	@echo "Building etcd v$(ENVTEST_ETCD_VERSION) from Go modules"
	cd $(ENVTEST_MODULE)/etcd && GOOS=$(GOOS) GOARCH=$(GOARCH) CGO_ENABLED=0 go build -trimpath \
		-ldflags "-s -w" -o $@ .

$(ENVTEST_ASSETS)/etcdutl:
	@echo "Building etcdutl v$(ENVTEST_ETCD_VERSION) from Go modules (the restore tests)"
	cd $(ENVTEST_MODULE)/etcdutl && GOOS=$(GOOS) GOARCH=$(GOARCH) CGO_ENABLED=0 go build -trimpath \
		-ldflags "-s -w" -o $@ .

.PHONY: kustomize
kustomize: $(KUSTOMIZE) ## Install kustomize into bin/ if necessary.
$(KUSTOMIZE): $(LOCALBIN)
	$(call go-install-tool,$(KUSTOMIZE),sigs.k8s.io/kustomize/kustomize/v5,$(KUSTOMIZE_VERSION))

.PHONY: stripe-mock
stripe-mock: $(STRIPE_MOCK) ## Install stripe-mock (Stripe's official API mock) into bin/ if necessary.
$(STRIPE_MOCK): $(LOCALBIN)
	$(call go-install-tool,$(STRIPE_MOCK),github.com/stripe/stripe-mock,$(STRIPE_MOCK_VERSION))

.PHONY: golangci-lint
golangci-lint: $(GOLANGCI_LINT) ## Build golangci-lint into bin/ if necessary (from the module proxy, pinned).
$(GOLANGCI_LINT): $(LOCALBIN)
	$(call go-install-tool,$(GOLANGCI_LINT),github.com/golangci/golangci-lint/v2/cmd/golangci-lint,$(GOLANGCI_LINT_VERSION))

.PHONY: kubebuilder
kubebuilder: $(KUBEBUILDER) ## Build kubebuilder (its helm/v2-alpha plugin generates dist/chart) into bin/ if necessary.
$(KUBEBUILDER): $(LOCALBIN)
	$(call go-install-tool,$(KUBEBUILDER),sigs.k8s.io/kubebuilder/v4,$(KUBEBUILDER_VERSION))

.PHONY: helm
helm: $(HELM) ## Build the Helm CLI into bin/ if necessary (from the module proxy, pinned).
$(HELM): $(LOCALBIN)
	$(call go-install-tool,$(HELM),helm.sh/helm/v4/cmd/helm,$(HELM_VERSION))

.PHONY: controller-gen
controller-gen: $(CONTROLLER_GEN) ## Install controller-gen into bin/ if necessary.
$(CONTROLLER_GEN): $(LOCALBIN)
	$(call go-install-tool,$(CONTROLLER_GEN),sigs.k8s.io/controller-tools/cmd/controller-gen,$(CONTROLLER_TOOLS_VERSION))

# go-install-tool will 'go install' any package with a custom target and the
# name of the binary, if it doesn't exist at that version.
# $1 - target path with name of binary
# $2 - package url which can be installed
# $3 - specific version of package
define go-install-tool
@[ -f "$(1)-$(3)" ] && [ "$$(readlink -- "$(1)" 2>/dev/null)" = "$(notdir $(1))-$(3)" ] || { \
set -e; \
package=$(2)@$(3) ;\
echo "Downloading $${package}" ;\
rm -f "$(1)" ;\
GOBIN="$(LOCALBIN)" go install $${package} ;\
mv "$(LOCALBIN)/$$(basename "$(1)")" "$(1)-$(3)" ;\
} ;\
ln -sf "$(notdir $(1))-$(3)" "$(1)"
endef

