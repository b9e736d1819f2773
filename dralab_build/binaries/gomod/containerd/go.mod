// Wrapper module: builds containerd 2.x (containerd, containerd-shim-runc-v2,
// ctr) from the Go module proxy for the lab's offline mirror. The version is
// the containerd role's containerd_version: build.py adds the `require` line.
module dralab.local/harness/containerd

go 1.24.0

tool (
	github.com/containerd/containerd/v2/cmd/containerd
	github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2
	github.com/containerd/containerd/v2/cmd/ctr
)
