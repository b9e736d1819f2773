// Wrapper module: builds the CNI plugins release (every Linux plugin that
// upstream's build_linux.sh builds: plugins/{ipam,main,meta}/*) from the Go
// module proxy. build.py builds every `tool` below into one folder. The
// version is the containerd role's containerd_cni_plugins_version: build.py
// adds the `require` line.
module dralab.local/harness/cni-plugins

go 1.24.0

tool (
	github.com/containernetworking/plugins/plugins/ipam/dhcp
	github.com/containernetworking/plugins/plugins/ipam/host-local
	github.com/containernetworking/plugins/plugins/ipam/static
	github.com/containernetworking/plugins/plugins/main/bridge
	github.com/containernetworking/plugins/plugins/main/dummy
	github.com/containernetworking/plugins/plugins/main/host-device
	github.com/containernetworking/plugins/plugins/main/ipvlan
	github.com/containernetworking/plugins/plugins/main/loopback
	github.com/containernetworking/plugins/plugins/main/macvlan
	github.com/containernetworking/plugins/plugins/main/ptp
	github.com/containernetworking/plugins/plugins/main/tap
	github.com/containernetworking/plugins/plugins/main/vlan
	github.com/containernetworking/plugins/plugins/meta/bandwidth
	github.com/containernetworking/plugins/plugins/meta/firewall
	github.com/containernetworking/plugins/plugins/meta/portmap
	github.com/containernetworking/plugins/plugins/meta/sbr
	github.com/containernetworking/plugins/plugins/meta/tuning
	github.com/containernetworking/plugins/plugins/meta/vrf
)
