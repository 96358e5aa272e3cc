#!/usr/bin/env bash
# Builds the libFuzzer targets: Lookout's library modules with coverage instrumentation and
# AddressSanitizer (SwiftPM, scratch path .build/fuzz), then one binary per file in targets/
# (swiftc -sanitize=fuzzer,address), linked with those modules' objects.
set -euo pipefail
cd "$(dirname "$0")/../.."
SCRATCH=.build/fuzz
OUT=$SCRATCH/bin
MODULES=(LookoutHTTP LookoutHTTP2 LookoutCache LookoutLogQuery LookoutRecordings LookoutTLS LookoutConfig)
mkdir -p "$OUT"
for module in "${MODULES[@]}"; do
  swift build --scratch-path "$SCRATCH" --target "$module" -Xswiftc -sanitize=fuzzer,address -Xcc -fsanitize=fuzzer-no-link,address
done
BUILD=$(realpath "$SCRATCH/debug")
# The objects of the modules built above and of everything they depend on (built with them):
# every module's, but the tests', the executables' and the build tools'.
mapfile -t OBJECTS < <(find "$BUILD" -mindepth 2 -name "*.o" -path "*.build/*" \
  ! -path "*Tests.build/*" ! -path "*/lookout.build/*" ! -path "*-tool.build/*" ! -path "*PackageDiscoveredTests*" | sort)
# The C modules' maps: the system libraries' and the shims' SwiftPM generated.
MAPS=()
for map in Sources/CLookout*/module.modulemap "$BUILD"/CLookoutSocket.build/module.modulemap \
           "$SCRATCH"/checkouts/Yams/Sources/CYaml/include/module.modulemap; do
  MAPS+=(-Xcc "-fmodule-map-file=$map")
done
LIBS=(-lssl -lcrypto -lnghttp2 -lz -lbrotlidec -lbrotlienc)
for target in Tests/fuzz/targets/*.swift; do
  name=$(basename "$target" .swift)
  [ "$name" = FuzzInput ] && continue
  swiftc -g -parse-as-library -sanitize=fuzzer,address -module-name "Fuzz_$name" \
    -I "$BUILD/Modules" -I "$BUILD" "${MAPS[@]}" \
    Tests/fuzz/targets/FuzzInput.swift "$target" "${OBJECTS[@]}" "${LIBS[@]}" -o "$OUT/$name"
  echo "built $OUT/$name"
done
