#!/usr/bin/env bash
# Regenerates docs/stowage.1, the tool's manual page, from its own help texts with
# swift-argument-parser's generate-manual plugin, so `man stowage` says what `stowage help` says.
#
# Usage: Scripts/generate-manual.sh   (from anywhere; builds the package's products in debug)
# Install: sudo install -m 644 docs/stowage.1 /usr/local/share/man/man1/   (then `man stowage`)
set -euo pipefail
cd "$(dirname "$0")/.."

# The page's date is the last commit's, so an unchanged tree regenerates the same bytes.
swift package plugin generate-manual --configuration debug --date "$(git log -1 --format=%cs)" \
    --authors 'the Stowage authors'
# The generator copies a help text's blank lines into the page; roff warns about each and
# treats it as a line break. .Pp is mdoc's paragraph break (mdoc(7), "Pp").
sed 's/^$/.Pp/' .build/plugins/GenerateManual/outputs/StowageCLI/stowage.1 > docs/stowage.1
echo "wrote docs/stowage.1"
