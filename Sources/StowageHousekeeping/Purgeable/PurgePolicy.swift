import StowageCore

/// When a purgeable directory's files are deleted: `APPurgeablePath`'s `APPurgeableType`.
///
/// ```swift
/// try await purgeable.register("Library/Caches/feeds", policy: .oneWeek, sizeCap: 200 * .megabyte)
/// let policy = try PurgePolicy(parsing: "14d")   // .olderThan(days: 14)
/// ```
public enum PurgePolicy: Sendable, Hashable, Codable, CustomStringConvertible {
    /// Never deleted by a sweep; emptied only by `PurgeableDirectories/resetAll()` or
    /// `PurgeableDirectories/clear(_:)` (`APPurgeableTypeManual`). A size cap still applies.
    case manual
    /// Files older than this many days are deleted by every sweep.
    case olderThan(days: Int)

    /// Files older than three days are deleted (`APPurgeableTypeThreeDays`).
    public static let threeDays = PurgePolicy.olderThan(days: 3)
    /// Files older than a week are deleted (`APPurgeableTypeOneWeek`).
    public static let oneWeek = PurgePolicy.olderThan(days: 7)
    /// Files older than two weeks are deleted (`APPurgeableTypeTwoWeeks`).
    public static let twoWeeks = PurgePolicy.olderThan(days: 14)
    /// Files older than thirty days are deleted (`APPurgeableTypeOneMonth`).
    public static let oneMonth = PurgePolicy.olderThan(days: 30)

    /// Parses `manual` or a number of days with its unit, `Nd` (`3d`, `7d`, `14d`, `30d`); `0d`
    /// is manual, as `APPurgeableTypeManual = 0`. A bare number is refused: `7` could as well
    /// mean hours or weeks.
    ///
    /// - Throws: `StowageError` `.invalidArgument` naming the text and the accepted forms.
    public init(parsing text: String) throws {
        try self.init(parsing: text, unitRequired: true)
    }

    private init(parsing text: String, unitRequired: Bool) throws {
        let trimmed = text.trimmingWhitespace().lowercased()
        if trimmed == "manual" {
            self = .manual
            return
        }
        let hasUnit = trimmed.hasSuffix("d")
        let digits = hasUnit ? String(trimmed.dropLast()) : trimmed
        guard let days = Int(digits), days >= 0, days <= 36_500 else {
            throw StowageError.invalidArgument(
                "cannot read '\(text)' as a purge policy: write 'manual' or a number of days such as '3d', '7d', "
                    + "'14d', '30d' (0d to 36500d)"
            )
        }
        guard hasUnit || !unitRequired else {
            throw StowageError.invalidArgument(
                "the purge policy '\(text)' has no unit: write '\(days)d' for \(days) days (units: d, as in '3d', "
                    + "'7d', '14d', '30d'), or 'manual'"
            )
        }
        self = days == 0 ? .manual : .olderThan(days: days)
    }

    /// `"manual"` or `"7d"`: the form ``init(parsing:)`` reads and the registry file stores.
    public var description: String {
        switch self {
        case .manual: "manual"
        case .olderThan(let days): "\(days)d"
        }
    }

    /// The age after which files go, `nil` for manual.
    var maximumAge: Double? {
        switch self {
        case .manual: nil
        case .olderThan(let days): Double(days) * 86_400
        }
    }

    /// Decodes the value from the form ``encode(to:)`` writes.
    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        // A registry written by hand may say `7` for seven days; ``description`` writes `7d`.
        self = try PurgePolicy(parsing: text, unitRequired: false)
    }

    /// Encodes the value for JSON reports.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}
