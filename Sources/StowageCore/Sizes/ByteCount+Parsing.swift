extension ByteCount {
    /// Parses a size written by a person, as CLI options and manifests take them.
    ///
    /// Accepted: a non-negative number (`512`, `1.5`) followed by an optional unit, with or
    /// without a space, in any letter case. Decimal units are powers of 1000 (`B`, `K`/`KB`,
    /// `M`/`MB`, `G`/`GB`, `T`/`TB`, `P`/`PB`); binary units are powers of 1024 (`KiB`, `MiB`,
    /// `GiB`, `TiB`, `PiB`). A fractional result is rounded to the nearest byte.
    ///
    /// ```swift
    /// try ByteCount(parsing: "200MB")    // 200_000_000
    /// try ByteCount(parsing: "1.5GiB")   // 1_610_612_736
    /// ```
    ///
    /// - Throws: ``StowageError`` with code `.invalidArgument` naming the text and the accepted
    ///   forms when the text is not a size.
    public init(parsing text: String) throws {
        let trimmed = text.trimmingWhitespace()
        let numberEnd = trimmed.firstIndex { !($0.isASCII && ($0.isNumber || $0 == ".")) } ?? trimmed.endIndex
        let numberText = trimmed[..<numberEnd]
        let unitText = trimmed[numberEnd...].trimmingWhitespace().lowercased()

        guard !numberText.isEmpty, numberText.filter({ $0 == "." }).count <= 1, numberText != ".",
            let number = Double(numberText)
        else {
            throw Self.parseError(text, reason: "it does not start with a non-negative number")
        }
        guard let multiplier = Self.unitMultipliers[unitText] else {
            throw Self.parseError(text, reason: "'\(unitText)' is not a size unit")
        }
        let bytes = (number * Double(multiplier)).rounded()
        guard bytes < 9.2e18 else {
            throw Self.parseError(text, reason: "it is larger than 8 EiB")
        }
        self.init(Int64(bytes))
    }

    private static let unitMultipliers: [String: Int64] = [
        "": 1, "b": 1, "byte": 1, "bytes": 1,
        "k": 1_000, "kb": 1_000, "m": 1_000_000, "mb": 1_000_000,
        "g": 1_000_000_000, "gb": 1_000_000_000, "t": 1_000_000_000_000, "tb": 1_000_000_000_000,
        "p": 1_000_000_000_000_000, "pb": 1_000_000_000_000_000,
        "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40, "pib": 1 << 50,
    ]

    private static func parseError(_ text: String, reason: String) -> StowageError {
        .invalidArgument(
            "cannot read '\(text)' as a size: \(reason); write a number and an optional unit, "
                + "e.g. '512', '200MB', '1.5GiB' (B, KB, MB, GB, TB are 1000-based; KiB, MiB, GiB, TiB 1024-based)"
        )
    }
}

extension StringProtocol {
    /// The text without leading and trailing spaces, tabs and newlines.
    package func trimmingWhitespace() -> String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else {
            return ""
        }
        return String(self[first...last])
    }
}
