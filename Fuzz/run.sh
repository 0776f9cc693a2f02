#!/usr/bin/env bash
# Coverage-guided fuzzing with libFuzzer + AddressSanitizer of
#   parser   — the Cache-Control, HTTP-date and entity-tag parsers (Fuzz/ParserFuzzer.swift);
#   manifest — the clean-manifest parsers (JSON, XML and binary property lists) and the
#              container-path and entry-pattern rules behind them (Fuzz/ManifestFuzzer.swift).
#
#   Fuzz/run.sh [SECONDS] [parser|manifest|all]    # default 60 seconds each, all targets
#
# Each target builds alone as one module with the sources it needs. Corpora start from
# Fuzz/seeds and Fuzz/manifest-seeds (NUL and control bytes in JSON, XML and binary plists)
# and grow in .build-fuzz/ (not committed).
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_TO_RUN=${1:-60}
TARGETS=${2:-all}
OUT=.build-fuzz
mkdir -p "$OUT"

fuzz_parser() {
    mkdir -p "$OUT/corpus"
    cp -n Fuzz/seeds/* "$OUT/corpus/" 2>/dev/null || true
    # EntityTag.parseList is internal to the module; compiled in one module here, it is visible.
    swiftc -O -sanitize=fuzzer,address -parse-as-library -module-name ParserFuzz \
        Fuzz/ParserFuzzer.swift Sources/StowageHTTPCache/Parsing/*.swift -o "$OUT/parser-fuzzer"
    "$OUT/parser-fuzzer" "$OUT/corpus" -max_total_time="$SECONDS_TO_RUN" -max_len=4096 -timeout=5
}

fuzz_manifest() {
    mkdir -p "$OUT/manifest-corpus" "$OUT/manifest-src" "$OUT/shims"
    cp -n Fuzz/manifest-seeds/* "$OUT/manifest-corpus/" 2>/dev/null || true
    # StowageCore and the cleaner's parsing files as one module: their `import StowageCore`
    # lines go, CStowageShims comes in through a module map and its C file.
    rm -f "$OUT"/manifest-src/*.swift
    for file in $(find Sources/StowageCore -name '*.swift') Sources/StowageHousekeeping/Cleaner/{ManifestParser,CleanManifest,CleanTask,EntryPattern}.swift; do
        sed '/^import StowageCore$/d' "$file" > "$OUT/manifest-src/$(echo "$file" | tr / _)"
    done
    cp Sources/CStowageShims/include/*.h "$OUT/shims/"
    printf 'module CStowageShims {\n    header "CStowageShims.h"\n    export *\n}\n' > "$OUT/shims/module.modulemap"
    clang -O1 -fsanitize=fuzzer-no-link,address -ISources/CStowageShims/include -c Sources/CStowageShims/shims.c \
        -o "$OUT/shims.o"
    swiftc -O -sanitize=fuzzer,address -parse-as-library -module-name ManifestFuzz -package-name Stowage \
        -Xcc -I"$OUT/shims" -I "$OUT/shims" \
        Fuzz/ManifestFuzzer.swift "$OUT"/manifest-src/*.swift "$OUT/shims.o" -o "$OUT/manifest-fuzzer"
    # Leak detection off: Foundation's CFPropertyList leaks its CFError on every malformed plist
    # (inside libFoundation, seen with Swift 6.3.1), which would stop the run at the first one.
    ASAN_OPTIONS=detect_leaks=0 "$OUT/manifest-fuzzer" "$OUT/manifest-corpus" -max_total_time="$SECONDS_TO_RUN" -max_len=4096 -timeout=5 \
        -detect_leaks=0 -rss_limit_mb=8192
}

case "$TARGETS" in
parser) fuzz_parser ;;
manifest) fuzz_manifest ;;
all) fuzz_parser && fuzz_manifest ;;
*) echo "usage: Fuzz/run.sh [SECONDS] [parser|manifest|all]" >&2; exit 64 ;;
esac
