#!/usr/bin/env bash
# Checks docker/Dockerfile's runtime stage on a machine without a Docker engine.
#
#   docker/verify-runtime.sh BINARY WORKDIR     (as root; `make docker-verify` builds BINARY first)
#
# Makes (once, then reuses) a Debian bookworm minbase root with debootstrap that
# holds exactly the stage's RUNTIME_PACKAGES, copies the statically built
# binary in as the stage does, and inside it (chroot): checks that every shared
# library the binary needs is there, runs `ca init` and `serve`, and asks the
# control API for /health with the root's own curl, as the image's HEALTHCHECK
# does. Exits 0 only if /health answers and serve stops cleanly on SIGTERM.
set -euo pipefail

binary=${1:?usage: verify-runtime.sh BINARY WORKDIR}
work=${2:?usage: verify-runtime.sh BINARY WORKDIR}
cd "$(dirname "$0")/.."
mkdir -p "$work"
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

say() { echo "docker-verify: $*"; }
fail() { echo "docker-verify: FAILED: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || fail "needs root (debootstrap, chroot, mount)"
[ -x "$binary" ] || fail "no binary at $binary"
packages=$(sed -n 's/^ARG RUNTIME_PACKAGES="\(.*\)"$/\1/p' docker/Dockerfile)
[ -n "$packages" ] || fail "docker/Dockerfile has no ARG RUNTIME_PACKAGES=\"...\" line"

# One cached root per package list, so a changed list gets a fresh root.
key=$(printf '%s' "$packages" | sha256sum | cut -c1-12)
root=$(realpath -m "$work/bookworm-$key")
if [ ! -f "$root/.complete" ]; then
    if [ -e "$root" ]; then
        # Never delete through a mount left behind by an interrupted run.
        if findmnt -rno TARGET | grep -q "^$root/"; then fail "$root still has mounts; unmount them first"; fi
        rm -rf "$root"
    fi
    say "debootstrap bookworm (minbase) + $packages into $root (once; later runs reuse it)"
    mkdir -p "$(dirname "$root")"
    debootstrap --variant=minbase --include="${packages// /,}" bookworm "$root" "$mirror" > "$work/debootstrap.log" 2>&1 \
        || { tail -20 "$work/debootstrap.log" >&2; fail "debootstrap failed (log: $work/debootstrap.log)"; }
    touch "$root/.complete"
else
    say "reusing $root"
fi

serve_pid=""
cleanup() {
    if [ -n "$serve_pid" ] && kill -0 "$serve_pid" 2>/dev/null; then
        kill -KILL "$serve_pid" 2>/dev/null || true
        wait "$serve_pid" 2>/dev/null || true
    fi
    if mountpoint -q "$root/proc"; then umount "$root/proc" || umount -l "$root/proc"; fi
    rm -rf "$root/ca" "$root/usr/local/bin/pinproxy"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# As the stage's COPY and RUN lines: the binary, an empty /ca.
install -D -m 0755 "$binary" "$root/usr/local/bin/pinproxy"
rm -rf "$root/ca"
mkdir -p "$root/ca"
mountpoint -q "$root/proc" || mount -t proc proc "$root/proc"

# A command inside the root, with a clean environment.
inside=(env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root chroot "$root")

missing=$("${inside[@]}" ldd /usr/local/bin/pinproxy | grep 'not found' || true)
[ -z "$missing" ] || fail "libraries missing from the runtime stage (add their packages to RUNTIME_PACKAGES):
$missing"
say "$("${inside[@]}" /usr/local/bin/pinproxy --version | sed 's/^/pinproxy /')"
"${inside[@]}" /usr/local/bin/pinproxy ca init --dir /ca > "$work/ca-init.out" 2>&1 \
    || { cat "$work/ca-init.out" >&2; fail "ca init"; }

# The image's CMD, on free loopback ports so nothing else on the machine is disturbed.
# exec: env and chroot exec in turn, so $! is the daemon's own pid.
(exec "${inside[@]}" /usr/local/bin/pinproxy serve --ca-dir /ca --listen 127.0.0.1:0 --admin 127.0.0.1:0) \
    > "$work/serve.out" 2> "$work/serve.err" &
serve_pid=$!
admin=""
for _ in $(seq 1 300); do
    admin=$(sed -n 's/.*; admin http:\/\/\([^ ]*\)$/\1/p' "$work/serve.out")
    [ -n "$admin" ] && break
    kill -0 "$serve_pid" 2>/dev/null || { cat "$work/serve.err" >&2; fail "serve exited before its ready line"; }
    sleep 0.1
done
[ -n "$admin" ] || { cat "$work/serve.err" >&2; fail "no ready line from serve within 30 s"; }
say "$(cat "$work/serve.out")"

health=$("${inside[@]}" curl -fsS "http://$admin/health") || { cat "$work/serve.err" >&2; fail "GET /health on $admin"; }
say "/health: $health"

kill -TERM "$serve_pid"
status=0
wait "$serve_pid" || status=$?
serve_pid=""
[ "$status" = 0 ] || { cat "$work/serve.err" >&2; fail "serve exited $status on SIGTERM"; }
say "ok: the runtime stage ($packages) runs ca init, serve and /health"
