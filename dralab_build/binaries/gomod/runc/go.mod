// Wrapper module: builds runc (cgo, static, seccomp: needs Debian's
// libseccomp-dev) from the Go module proxy. The root package is the runc main.
// The version is the containerd role's containerd_runc_version: build.py adds
// the `require` line.
module dralab.local/harness/runc

go 1.24.0

tool github.com/opencontainers/runc
