# Shared by the bench scripts that start their own servers; source it after
# `set -euo pipefail` and `cd` to the repository root. It gives each run a scratch
# directory ($WORK), kills every process whose pid is added to PIDS when the script
# exits, waits for loopback ports, names a missing tool with how to install it, and
# makes the links, codes and wrk scripts of the short-link benchmarks.
WORK=$(mktemp -d)
PIDS=()
# Extra clean-up a script needs (dropping its databases, say): redefine
# bench_cleanup_extra; it runs after the processes are killed.
bench_cleanup_extra() { :; }
bench_cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; sleep 0.5; bench_cleanup_extra; rm -rf "$WORK"; }
trap bench_cleanup EXIT

# wait_port PORT: until 127.0.0.1:PORT accepts a connection (20 s at most).
wait_port() {
  for _ in $(seq 200); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done
  echo "port $1 never opened" >&2
  return 1
}

# need COMMAND HOW: stop with "needs COMMAND (HOW)" unless COMMAND is on the PATH.
need() { command -v "$1" >/dev/null || { echo "needs $1 ($2)" >&2; exit 1; }; }


# links_jsonl N FILE: N distinct links, one JSON object per line, for `shardkit links import`.
# (awk: Python took ~5 minutes for 100 M lines on a 2-vCPU VM.)
links_jsonl() {
  LC_ALL=C awk -v n="$1" 'BEGIN { for (i = 0; i < n; i++) printf "{\"url\":\"https://example.com/articles/%d?ref=bench\"}\n", i }' > "$2"
}

# codes_of RESULTS CODES: the codes from `shardkit links import` output, one per line.
# (awk on fields split at `"`, not a JSON parser: Python took over 5 minutes for 100 M
# lines, and sed's regex 21 µs a line on a 2-vCPU VM against awk's 0.6; the import
# writes each result as {"code":"...",...}, and a line without a code fails the bench.)
codes_of() {
  codes_in "$1" > "$2"
  local lines codes
  lines=$(wc -l < "$1"); codes=$(wc -l < "$2")
  [ "$lines" = "$codes" ] || { echo "codes_of: $((lines - codes)) of $lines results have no code" >&2; return 1; }
}

# codes_in [RESULTS]: the code of each `{"code":"...",...}` line of RESULTS (or stdin),
# one per line; the one parsing rule of codes_of and import_codes.
codes_in() { LC_ALL=C awk -F'"' '$2 == "code" { print $4 }' "$@"; }

# import_codes BIN SERVER LINKS CODES [ARGS...]: `BIN links import LINKS --batch 10000
# --server SERVER ARGS...` with the codes taken from its output as it comes (codes_of's
# awk in the pipe), so a 100 M import writes no 10 GB results file to read back; fails
# unless every link of LINKS got a code.
import_codes() {
  local bin="$1" server="$2" links="$3" codes="$4"
  shift 4
  "$bin" links import "$links" --batch 10000 --server "$server" "$@" 2>/dev/null \
    | codes_in > "$codes"
  local lines got
  lines=$(wc -l < "$links"); got=$(wc -l < "$codes")
  [ "$lines" = "$got" ] || { echo "import_codes: $((lines - got)) of $lines links have no code" >&2; return 1; }
}

# warm FILE...: reads the files once (their pages into the page cache), as a server that
# has served for a while holds the pages its traffic reads. Missing files are skipped.
warm() {
  local f
  for f in "$@"; do [ -e "$f" ] && find "$f" -type f -exec cat {} + > /dev/null; done
  return 0
}

# uncache FILE...: drops the files' pages from the page cache (posix_fadvise
# DONTNEED), so a benchmark's own inputs and results do not crowd the server's data out
# of it (a server in use has no 10 GB result file beside it). Missing files are skipped.
uncache() {
  python3 - "$@" <<'PY'
import os, sys
for path in sys.argv[1:]:
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        continue
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)
PY
}

# codes_lua CODES: the head of a wrk script that holds the codes of CODES (one per line)
# as "/CODE" paths in one string at a fixed width (a Lua table of 100 M codes is ~6 GB
# per wrk thread, the string under 1 GB), with path(i) the i-th (0-based) and n how many.
# The script sets LuaJIT's GC pause to 100%: with its default (200%) a collection starts
# only when the heap is twice its live size, and the live size is the codes' string
# (80 MB at 10 M codes), so wrk piled up ~80 MB of request strings, all distinct when
# drawn from millions of codes, and stalled its connections while collecting them and
# resizing its string table: at 10 M links the p99 of redirects the server answered from
# its cache went from 3.9 ms to 157 ms with distinct strings, and back to 3.8 ms with the
# pause at 100% (bench/notes/runs.md, thirty-second session).
codes_lua() {
  local packed="$1.packed" width padded
  # The packed string is made once per CODES file: a second script over the same codes
  # (uniform, then Zipf) reads the width from `$packed.meta`, which names the CODES
  # file's size and mtime it was packed from (100 M codes took minutes to pack).
  read -r width padded < <(python3 - "$1" "$packed" <<'PY'
import os, sys
src, dst = sys.argv[1], sys.argv[2]
st = os.stat(src)
stamp = f"{st.st_size} {st.st_mtime_ns}"
try:
    width, padded, made_from = open(dst + ".meta").read().split(" ", 2)
    if made_from.strip() == stamp and os.path.exists(dst):
        print(width, padded)
        sys.exit(0)
except (FileNotFoundError, ValueError):
    pass
lengths = {len(l.strip()) for l in open(src) if l.strip()}
width = max(lengths) + 1
with open(dst, "w") as out:
    for line in open(src):
        code = line.strip()
        if code:
            out.write(("/" + code).ljust(width))
padded = int(len(lengths) > 1)
with open(dst + ".meta", "w") as meta:
    meta.write(f"{width} {padded} {stamp}\n")
print(width, padded)
PY
)
  cat <<LUA
collectgarbage("setpause", 100)
local W, PADDED = $width, $padded
local f = assert(io.open("$packed", "rb"))
local all = f:read("*a")
f:close()
local n = math.floor(#all / W)
local function path(i)
  local s = all:sub(i * W + 1, i * W + W)
  if PADDED == 1 then s = s:match("^(%S+)") end
  return s
end
math.randomseed(os.time() + tonumber(tostring({}):sub(8), 16))
LUA
}

# random_codes_lua CODES LUA: a wrk script that GETs /CODE for a random code per request.
random_codes_lua() {
  { codes_lua "$1"; echo 'request = function() return wrk.format("GET", path(math.random(n) - 1)) end'; } > "$2"
}

# zipf_codes_lua CODES LUA: like random_codes_lua, with rank r drawn as floor((n+1)^u)
# (Zipf with s = 1, continuous inverse CDF) and scattered by a multiplier.
zipf_codes_lua() {
  {
    codes_lua "$1"
    cat <<'LUA'
request = function()
  local r = math.floor((n + 1) ^ math.random())
  if r > n then r = n end
  return wrk.format("GET", path(((r - 1) * 7919) % n))
end
LUA
  } > "$2"
}

# wrk_figures: from wrk's --latency output on stdin, "REQ_PER_S P99 NON_3XX REQUESTS".
wrk_figures() { python3 -c '
import re, sys
out = sys.stdin.read()
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
p99 = re.search(r"99%\s+([\d.]+\w+)", out).group(1)
non = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
reqs = int(re.search(r"(\d+) requests in", out).group(1))
print(f"{rps:.0f} {p99} {int(non.group(1)) if non else 0} {reqs}")'; }

# cpu_us TICKS0 TICKS1 REQUESTS: a server's CPU a request in µs, from cpu_total's ticks.
cpu_us() { python3 -c "import os, sys; print(round((int(sys.argv[2]) - int(sys.argv[1])) * 1e6 / os.sysconf('SC_CLK_TCK') / max(int(sys.argv[3]), 1), 1))" "$@"; }

# free_port: a loopback port nothing listens on now (the kernel's pick).
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# cpu_ticks PID: "utime stime" of the process in clock ticks (fields 14 and 15 of
# /proc/PID/stat, counted after the ") " that ends the command name, which may hold spaces).
cpu_ticks() { awk '{ sub(/.*\) /, ""); print $12, $13 }' "/proc/$1/stat"; }

# cpu_total PID: utime + stime of the process in clock ticks.
cpu_total() { awk '{ sub(/.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"; }

# tag_served_by PORT: a hash tag whose slot the cluster node on PORT serves (it answers
# `GET counter:0{<tag>}` itself, without -MOVED and the like).
tag_served_by() {
  local k
  for k in $(seq 0 999); do
    case "$(timeout 2 redis-cli -p "$1" GET "counter:0{t$k}" 2>&1)" in
      *MOVED*|*ASK*|*TRYAGAIN*|*CLUSTERDOWN*|*ERR*) ;;
      *) echo "t$k"; return 0 ;;
    esac
  done
  echo "no tag served by $1" >&2; return 1
}
