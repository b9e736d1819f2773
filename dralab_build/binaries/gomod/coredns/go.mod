// Wrapper module: builds CoreDNS from the Go module proxy; the module's root
// package is the coredns main (with the default plugin set of its
// core/plugin/zplugin.go). Version: the one kubeadm 1.35 deploys
// (`kubeadm config images list`); mirror_build.py checks that they agree.
module dralab.local/harness/coredns

go 1.24.0

require github.com/coredns/coredns v1.13.1

tool github.com/coredns/coredns
