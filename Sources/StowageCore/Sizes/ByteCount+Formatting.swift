#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension ByteCount {
    /// How a ``ByteCount`` is written for people.
    public enum Style: Sendable, Hashable {
        /// Two decimals and short 1000-based units `B`, `KB`, `M`, switching unit only when the
        /// value is strictly greater than the next unit (`"512.00B"`, `"1000.00B"`, `"3.40KB"`,
        /// `"12.35M"`), then `G` and `T` above 10⁹ and 10¹² bytes: the strings iOS cache-clearing
        /// tools (`ClearCacheTool`) show, kept for reports that must match them.
        case compact
        /// Decimal units with three significant digits: `"512 B"`,
        /// `"3.4 KB"`, `"12.3 MB"`, `"1.5 GB"` (what Finder and most apps show).
        case decimal
        /// Binary IEC units with three significant digits: `"3.3 KiB"`, `"11.8 MiB"`, `"1.5 GiB"`.
        case binary
    }

    /// Writes the byte count for people in the given style.
    ///
    /// - Parameter style: The style; ``Style/decimal`` reads best in new UI, ``Style/compact``
    ///   reproduces the cache-clearing tools' strings exactly.
    public func formatted(_ style: Style = .decimal) -> String {
        switch style {
        case .compact: compactFormatted()
        case .decimal: unitFormatted(base: 1_000, units: ["B", "KB", "MB", "GB", "TB", "PB", "EB"])
        case .binary: unitFormatted(base: 1_024, units: ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"])
        }
    }

    private func compactFormatted() -> String {
        // ClearCacheTool: `if (totleSize > 1000 * 1000) "%.2fM" else if (> 1000) "%.2fKB" else "%.2fB"`.
        let value = Double(rawValue)
        let magnitude = abs(value)
        let (divisor, unit): (Double, String) =
            if magnitude > 1e12 { (1e12, "T") } else if magnitude > 1e9 { (1e9, "G") } else if magnitude > 1e6 {
                (1e6, "M")
            } else if magnitude > 1e3 { (1e3, "KB") } else { (1, "B") }
        return Self.fixed(value / divisor, decimals: 2) + unit
    }

    private func unitFormatted(base: Double, units: [String]) -> String {
        var value = Double(rawValue)
        var index = 0
        while abs(value) >= base, index < units.count - 1 {
            value /= base
            index += 1
        }
        if index == 0 { return "\(rawValue) B" }
        // Three significant digits: 1.23, 12.3, 123; rounding up to `base` moves to the next unit.
        var decimals = abs(value) < 10 ? 2 : abs(value) < 100 ? 1 : 0
        var text = Self.fixed(value, decimals: decimals)
        if let rounded = Double(text), abs(rounded) >= base, index < units.count - 1 {
            value = rounded / base
            index += 1
            decimals = 2
            text = Self.fixed(value, decimals: decimals)
        }
        return "\(Self.trimmingZeros(text)) \(units[index])"
    }

    private static func fixed(_ value: Double, decimals: Int) -> String {
        // snprintf rather than String(format:), which needs Foundation.
        var buffer = [CChar](repeating: 0, count: 64)
        _ = buffer.withUnsafeMutableBufferPointer { pointer in
            withVaList([decimals, value]) { vsnprintf(pointer.baseAddress, 64, "%.*f", $0) }
        }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private static func trimmingZeros(_ text: String) -> String {
        guard text.contains(".") else { return text }
        var result = Substring(text)
        while result.last == "0" { result.removeLast() }
        if result.last == "." { result.removeLast() }
        return String(result)
    }
}
