# Shared by the bench scripts that start their own servers; source it after
# `set -euo pipefail` and `cd` to the repository root. It gives each run a scratch
# directory ($WORK), kills every process whose pid is added to PIDS when the script
# exits, waits for loopback ports, and names a missing tool with how to install it.
WORK=$(mktemp -d)
PIDS=()
bench_cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; sleep 0.5; rm -rf "$WORK"; }
trap bench_cleanup EXIT

# wait_port PORT: until 127.0.0.1:PORT accepts a connection (10 s at most).
wait_port() {
  for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done
  echo "port $1 never opened" >&2
  return 1
}

# need COMMAND HOW: stop with "needs COMMAND (HOW)" unless COMMAND is on the PATH.
need() { command -v "$1" >/dev/null || { echo "needs $1 ($2)" >&2; exit 1; }; }
