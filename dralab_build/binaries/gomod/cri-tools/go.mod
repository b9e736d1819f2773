// Wrapper module: builds crictl from the Go module proxy. The version is the
// containerd role's containerd_crictl_version: build.py adds the `require`
// line. The proxy does not serve cri-tools v1.35.0; the lab uses v1.34.0
// (the cri-tools version Kubernetes 1.35 is tested with).
module dralab.local/harness/cri-tools

go 1.24.0

tool sigs.k8s.io/cri-tools/cmd/crictl
