#!/bin/sh
# Regenerates the Go code for internal/pb/plugin.proto into the folder given as $1
# (default: internal/pb). Run from anywhere; needs protoc (Debian: protobuf-compiler).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/internal/pb}
gen_go=$(cd "$here" && go tool -n protoc-gen-go)
gen_grpc=$(cd "$here" && go tool -n protoc-gen-go-grpc)
mkdir -p "$out"
protoc --proto_path="$here/internal/pb" \
  --plugin=protoc-gen-go="$gen_go" --plugin=protoc-gen-go-grpc="$gen_grpc" \
  --go_out="$out" --go_opt=paths=source_relative \
  --go-grpc_out="$out" --go-grpc_opt=paths=source_relative \
  plugin.proto
