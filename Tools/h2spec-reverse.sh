#!/usr/bin/env bash
# Runs h2spec (HTTP/2 conformance, RFC 7540/9113 and HPACK) against pinproxy in
# reverse mode, in front of a local nginx origin that speaks HTTP/2 over TLS:
# the set-up docs/http2.md reports. Prints h2spec's report and its summary line.
#
#   Tools/h2spec-reverse.sh [PINPROXY_BINARY]   (default .build/release/pinproxy)
#
# h2spec is built by Tools/build-h2spec.sh (into .build-conformance); nginx
# comes from Debian's nginx-light. Extra h2spec arguments go in H2SPEC_ARGS
# (e.g. H2SPEC_ARGS="http2/5.1" for one section).
set -euo pipefail
cd "$(dirname "$0")/.."
pinproxy=${1:-.build/release/pinproxy}
[ -x "$pinproxy" ] || { echo "no pinproxy binary at $pinproxy (swift build -c release)" >&2; exit 1; }
h2spec=$(Tools/build-h2spec.sh .build-conformance)
nginx=$(command -v nginx || echo /usr/sbin/nginx)
[ -x "$nginx" ] || { echo "nginx is needed as the origin (apt-get install nginx-light)" >&2; exit 1; }

work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0; sleep 0.1; done; echo "nothing listens on $1" >&2; return 1; }

# The origin: its own throwaway CA and leaf, made by pinproxy itself.
"$pinproxy" ca init --dir "$work/origin-ca" >/dev/null
"$pinproxy" forge --dir "$work/origin-ca" localhost 127.0.0.1 --out "$work/origin.pem" --key-out "$work/origin-key.pem" >/dev/null
origin_port=$(free_port)
# A body of more than 5 bytes, or h2spec skips its negative-window case (6.9.2/2).
mkdir -p "$work/www"; head -c 1024 /dev/zero | tr "\\0" x > "$work/www/index.html"
cat > "$work/nginx.conf" <<CONF
daemon off; master_process off; worker_processes 1; pid $work/nginx.pid;
error_log $work/error.log error;
events { worker_connections 256; }
http {
  access_log off;
  server {
    listen 127.0.0.1:$origin_port ssl http2;
    ssl_certificate $work/origin.pem; ssl_certificate_key $work/origin-key.pem;
    root $work/www;
  }
}
CONF
"$nginx" -p "$work" -c "$work/nginx.conf" -e "$work/error.log" & pids+=($!)
wait_port "$origin_port"

"$pinproxy" ca init --dir "$work/proxy-ca" >/dev/null
proxy_port=$(free_port)
"$pinproxy" serve --ca-dir "$work/proxy-ca" --listen "127.0.0.1:$proxy_port" \
  --mode "reverse:https://127.0.0.1:$origin_port" --upstream-ca "$work/origin-ca/pinproxy-ca.pem" \
  >"$work/proxy.log" 2>&1 & pids+=($!)
wait_port "$proxy_port"

set +e
"$h2spec" -h 127.0.0.1 -p "$proxy_port" -t -k -o 2 ${H2SPEC_ARGS:-}
status=$?
set -e
exit $status
