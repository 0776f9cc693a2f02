#!/usr/bin/env bash
# Coverage-guided fuzzing of the Cache-Control, HTTP-date and entity-tag parsers with libFuzzer.
#
#   Fuzz/run.sh [SECONDS]      # default 60; extra libFuzzer flags after it
#
# The parsers depend on Foundation only, so they build alone with the fuzzer entry point. The
# corpus starts from Fuzz/seeds and grows in .build-fuzz/corpus (not committed).
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_TO_RUN=${1:-60}
shift || true
OUT=.build-fuzz
mkdir -p "$OUT/corpus"
cp -n Fuzz/seeds/* "$OUT/corpus/" 2>/dev/null || true
# EntityTag.parseList is internal to the module; compiled in one module here, it is visible.
swiftc -O -sanitize=fuzzer,address -parse-as-library -module-name ParserFuzz \
    Fuzz/ParserFuzzer.swift Sources/StowageHTTPCache/Parsing/*.swift -o "$OUT/parser-fuzzer"
"$OUT/parser-fuzzer" "$OUT/corpus" -max_total_time="$SECONDS_TO_RUN" -max_len=4096 -timeout=5 "$@"
