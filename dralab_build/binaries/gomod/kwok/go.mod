// Wrapper module: builds kwok (fake nodes, pods marked Running) from the Go
// module proxy. v0.8.0 is built against k8s.io client libraries v0.36, which
// talk to a 1.35 API server within the supported client skew and know
// resource.k8s.io/v1.
module dralab.local/harness/kwok

go 1.26.0

require sigs.k8s.io/kwok v0.8.0

tool sigs.k8s.io/kwok/cmd/kwok
