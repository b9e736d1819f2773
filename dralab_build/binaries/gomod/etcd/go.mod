// Wrapper module: builds etcd from the Go module proxy. The server module's
// root package is the etcd main. Its own go.mod replaces the sibling etcd
// modules with ../api etc., which only applies inside etcd's repository, so
// `go mod tidy` here resolves them to the published versions it requires.
// Version: the one kubeadm 1.35 deploys (constants.DefaultEtcdVersion 3.6.6-0).
module dralab.local/harness/etcd

go 1.24

require go.etcd.io/etcd/server/v3 v3.6.6

tool go.etcd.io/etcd/server/v3
