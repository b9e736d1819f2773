// Wrapper module: builds the DRA example driver's kubelet plugin (emulated
// GPUs, driver gpu.example.com) and its controller and webhook from the Go
// module proxy.
module dralab.local/harness/dra-example-driver

go 1.26.0

require sigs.k8s.io/dra-example-driver v0.4.0

tool (
	sigs.k8s.io/dra-example-driver/cmd/dra-example-kubeletplugin
	// The image of the offline mirror also holds the chart's other two commands.
	sigs.k8s.io/dra-example-driver/cmd/dra-example-controller
	sigs.k8s.io/dra-example-driver/cmd/dra-example-webhook
)
