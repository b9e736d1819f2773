// Wrapper module: builds flanneld from the Go module proxy; the module's root
// package is the flanneld main. The version is the cni role's
// cni_flannel_version: build.py adds the `require` line.
module dralab.local/harness/flannel

go 1.24.0

tool github.com/flannel-io/flannel
