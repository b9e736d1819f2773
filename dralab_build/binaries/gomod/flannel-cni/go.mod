// Wrapper module: builds the flannel CNI plugin (the `flannel` binary that the
// flannel-cni-plugin image copies to /opt/cni/bin). Its home,
// github.com/flannel-io/cni-plugin, is not served by the Go module proxy, so
// this builds the plugin it was forked from: plugins/meta/flannel of the CNI
// plugins v0.9.1, the last release that had it. That plugin speaks CNI spec
// versions up to 0.4.0 (not the 1.0.0 of flannel's upstream cni-conf.json).
module dralab.local/harness/flannel-cni

go 1.24.0

require github.com/containernetworking/plugins v0.9.1

tool github.com/containernetworking/plugins/plugins/meta/flannel
