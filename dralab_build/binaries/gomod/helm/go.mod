// Wrapper module: builds the helm client from the Go module proxy. The version
// is the dra_driver role's dra_driver_helm_version: build.py adds the
// `require` line.
module dralab.local/harness/helm

go 1.24.0

tool helm.sh/helm/v3/cmd/helm
