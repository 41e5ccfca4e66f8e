#!/usr/bin/env bash
# Lays out the release binary's code by how the proxy runs it (BOLT, LLVM's post-link optimiser):
# hot code together, cold blocks split off, so that the request path touches fewer instruction-cache
# lines. docs/proxy.md, "Code layout from a profile (BOLT)", has the figures.
#
#   Tools/bolt-release.sh BINARY    (make release-bolt)
#
# BINARY is the release build linked with `-Xlinker --emit-relocs` (BOLT moves functions only with the
# relocations kept). The script instruments a copy, runs the proxy benchmark's loads through it
# (nginx origin, wrk, h2load and curl: keep-alive, new connections, bulk, HTTP/2 and forward mode, about
# a minute), rewrites BINARY from the profile those runs wrote, checks that the result relays, and
# puts it in BINARY's place; the binary as linked stays beside it as BINARY.linked (the input of a
# second run when nothing was relinked since). Work files go to
# bolt/ beside BINARY. BOLT (Debian's bolt-19) is LLVM_BOLT, else llvm-bolt-19, else llvm-bolt.
set -euo pipefail
binary=${1:?usage: Tools/bolt-release.sh BINARY}
[ -x "$binary" ] || { echo "no executable at $binary" >&2; exit 1; }
bolt=${LLVM_BOLT:-$(command -v llvm-bolt-19 || command -v llvm-bolt || true)}
[ -n "$bolt" ] || { echo "llvm-bolt not found (apt-get install bolt-19)" >&2; exit 1; }
# Run BOLT from its own folder: it finds its instrumentation runtime (libbolt_rt_instr.a) relative
# to the executable's path, and /usr/bin/llvm-bolt-19 is a link into /usr/lib/llvm-19/bin.
command -v "$bolt" > /dev/null || { echo "llvm-bolt not found at $bolt (apt-get install bolt-19)" >&2; exit 1; }
bolt=$(readlink -f "$(command -v "$bolt")")
merge=$(dirname "$bolt")/merge-fdata
has_relocations() { readelf -S "$1" 2>/dev/null | grep -q '\.rela\.text'; }

work=$(dirname "$binary")/bolt
mkdir -p "$work"
# The input is the binary as linked: BINARY itself when the linker just wrote it, else (nothing was
# relinked since the last run, and BINARY is that run's output) the copy kept from then.
if has_relocations "$binary"; then
    cp -p "$binary" "$binary.linked"
elif ! { [ -f "$work/pinproxy" ] && cmp -s "$binary" "$work/pinproxy" && has_relocations "$binary.linked"; }; then
    echo "$binary has no relocations: link it with -Xlinker --emit-relocs" >&2; exit 1
fi
linked=$binary.linked
rm -f "$work"/profile.* "$work/pinproxy-instrumented"
# Swift's partial-apply thunks of async functions end in an indirect jump through a table that
# BOLT 19 (and 22) cannot follow ("fixed PIC indirect branch", then std::out_of_range): they keep
# their place. None is on the proxy's request path.
skip='-skip-funcs=.*TA/1,.*TA'

echo "BOLT: instrumenting $linked"
"$bolt" "$linked" -o "$work/pinproxy-instrumented" -instrument "$skip" \
    --instrumentation-file="$work/profile" --instrumentation-file-append-pid > "$work/instrument.log" 2>&1 \
    || { tail -20 "$work/instrument.log" >&2; exit 1; }

echo "BOLT: profiling the benchmark's loads (log: $work/training.log)"
"$work/pinproxy-instrumented" bench proxy --duration 2 --rounds 1 --connections 4 --threads 1 --bulk-mb 16 \
    --load keep-alive --load new-connection --load bulk --load forward-keep-alive --http2 > "$work/training.log" 2>&1 \
    || { tail -20 "$work/training.log" >&2; exit 1; }
profiles=("$work"/profile.*.fdata)
[ -e "${profiles[0]}" ] || { echo "the instrumented run wrote no profile" >&2; exit 1; }
if [ ${#profiles[@]} -gt 1 ]; then "$merge" "${profiles[@]}" -o "$work/profile.fdata" 2>/dev/null; else cp "${profiles[0]}" "$work/profile.fdata"; fi

echo "BOLT: laying out the code"
"$bolt" "$linked" -o "$work/pinproxy.new" -data="$work/profile.fdata" "$skip" \
    -reorder-blocks=ext-tsp -reorder-functions=cdsort -split-functions -split-all-cold -icf=1 -use-gnu-stack \
    > "$work/optimise.log" 2>&1 || { tail -20 "$work/optimise.log" >&2; exit 1; }
grep -E "have non-empty execution profile|reordering modified layout" "$work/optimise.log" | sed 's/^/  /' || true

# The rewritten binary must still do the work: a keep-alive round through the proxy.
"$work/pinproxy.new" --version > /dev/null
"$work/pinproxy.new" bench proxy --duration 1 --rounds 1 --connections 4 --threads 1 --bulk-mb 1 --load keep-alive \
    > "$work/check.log" 2>&1 || { echo "the rewritten binary failed its check:" >&2; tail -20 "$work/check.log" >&2; exit 1; }

mv "$work/pinproxy.new" "$work/pinproxy"
cp "$work/pinproxy" "$binary"
echo "BOLT: $binary laid out from the profile (as linked: $binary.linked)"
