# Build the manager binary and the kubectl payments plugin
FROM golang:1.26 AS builder
ARG TARGETOS
ARG TARGETARCH
# The release version the plugin prints (make docker-build passes the chart's appVersion).
ARG VERSION=dev

WORKDIR /workspace
# Copy the Go Modules manifests
COPY go.mod go.mod
COPY go.sum go.sum
# The API types are a module of their own, which go.mod replaces with ./api.
COPY api/go.mod api/go.mod
COPY api/go.sum api/go.sum
# cache deps before building and copying source so that we don't need to re-download as much
# and so that source changes don't invalidate our downloaded layer
RUN go mod download

# Copy the go source
COPY cmd/ cmd/
COPY api/ api/
COPY internal/ internal/
# The manager imports pkg/operator; the plugin pkg/ledger and pkg/providerlookup.
COPY pkg/ pkg/

# Build a static binary. GOARCH has no default value so that the binary is
# built for the platform of the host where the command was called.
RUN CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} go build -trimpath -ldflags "-s -w" -o manager cmd/main.go
# The plugin ships with each image release: copy it out with
#   docker create IMAGE && docker cp CONTAINER:/kubectl-payments .
RUN CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} go build -trimpath \
    -ldflags "-s -w -X main.version=${VERSION}" -o kubectl-payments ./cmd/kubectl-payments

# Use distroless as minimal base image to package the manager binary
# Refer to https://github.com/GoogleContainerTools/distroless for more details
FROM gcr.io/distroless/static:nonroot
WORKDIR /
COPY --from=builder /workspace/manager .
COPY --from=builder /workspace/kubectl-payments /kubectl-payments
USER 65532:65532

ENTRYPOINT ["/manager"]
