/// A number of bytes: a size on disk, a limit, a quota.
///
/// Sizes are `Int64` so that a count of a multi-terabyte volume never overflows on 32-bit
/// platforms. Integer literals work where a `ByteCount` is expected:
///
/// ```swift
/// let limit: ByteCount = 200 * .megabyte
/// print(limit.formatted(.compact))      // "200.00M"
/// print(limit.formatted(.decimal))   // "200 MB"
/// let parsed = try ByteCount(parsing: "1.5GiB")
/// ```
public struct ByteCount: Hashable, Comparable, Sendable, Codable, ExpressibleByIntegerLiteral,
    AdditiveArithmetic, CustomStringConvertible
{
    /// The number of bytes.
    public var rawValue: Int64

    /// Creates a byte count.
    public init(_ bytes: Int64) { self.rawValue = bytes }
    /// Creates a byte count from an `Int`.
    public init(_ bytes: Int) { self.rawValue = Int64(bytes) }
    /// A count of `value` bytes, written as a literal.
    public init(integerLiteral value: Int64) { self.rawValue = value }

    /// No bytes.
    public static let zero = ByteCount(0)
    /// 1,000 bytes.
    public static let kilobyte = ByteCount(1_000)
    /// 1,000,000 bytes.
    public static let megabyte = ByteCount(1_000_000)
    /// 1,000,000,000 bytes.
    public static let gigabyte = ByteCount(1_000_000_000)
    /// 1,024 bytes.
    public static let kibibyte = ByteCount(1_024)
    /// 1,048,576 bytes.
    public static let mebibyte = ByteCount(1_048_576)
    /// 1,073,741,824 bytes.
    public static let gibibyte = ByteCount(1_073_741_824)

    /// Orders by the number of bytes.
    public static func < (lhs: ByteCount, rhs: ByteCount) -> Bool { lhs.rawValue < rhs.rawValue }
    /// The sum of two counts.
    public static func + (lhs: ByteCount, rhs: ByteCount) -> ByteCount { ByteCount(lhs.rawValue + rhs.rawValue) }
    /// The difference of two counts (negative when `rhs` is larger).
    public static func - (lhs: ByteCount, rhs: ByteCount) -> ByteCount { ByteCount(lhs.rawValue - rhs.rawValue) }
    /// `lhs` times the count.
    public static func * (lhs: Int64, rhs: ByteCount) -> ByteCount { ByteCount(lhs * rhs.rawValue) }
    /// The count times `rhs`.
    public static func * (lhs: ByteCount, rhs: Int64) -> ByteCount { ByteCount(lhs.rawValue * rhs) }

    /// The modern decimal form, e.g. `"12.3 MB"`.
    public var description: String { formatted(.decimal) }

    /// Decodes a count written as a plain integer of bytes.
    public init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(Int64.self)
    }

    /// Encodes the count as a plain integer of bytes.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}
