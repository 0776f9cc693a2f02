/// The phases of a clean, as `APUserCacheCleaner`'s `APCacheCleanPhase`.
public enum CleanPhase: String, Sendable, Hashable, Codable, CustomStringConvertible {
    /// Measuring what the tasks name, before anything is deleted.
    case preCalculating
    /// Deleting.
    case cleaning
    /// Measuring again, to tell what was freed.
    case postCalculating
    /// Finished; the report is ready.
    case done

    /// `"pre-calculating"`, `"cleaning"`, `"post-calculating"`, `"done"`.
    public var description: String {
        switch self {
        case .preCalculating: "pre-calculating"
        case .cleaning: "cleaning"
        case .postCalculating: "post-calculating"
        case .done: "done"
        }
    }
}

/// One progress event of ``CacheCleaner/run(_:dryRun:timeLimit:)``.
///
/// Fractions are real: entries measured or removed out of those counted, in `0...1`, never going
/// back within a phase. Events come at most about once per percent.
public enum CleanEvent: Sendable {
    /// Measuring: the fraction of the tasks' top-level entries measured.
    case preCalculating(fraction: Double)
    /// Deleting: the fraction of the counted entries removed, and the task at work
    /// (e.g. `"Path 'Library/Caches/images'"`).
    case cleaning(fraction: Double, task: String)
    /// Measuring again: the fraction of top-level entries measured.
    case postCalculating(fraction: Double)
    /// Finished: bytes freed per task and in total, and the errors of tasks that failed.
    case done(CleanReport)

    /// The event's phase.
    public var phase: CleanPhase {
        switch self {
        case .preCalculating: .preCalculating
        case .cleaning: .cleaning
        case .postCalculating: .postCalculating
        case .done: .done
        }
    }

    /// The fraction done in the phase; `1` for ``done(_:)``.
    public var fraction: Double {
        switch self {
        case .preCalculating(let fraction), .cleaning(let fraction, _), .postCalculating(let fraction): fraction
        case .done: 1
        }
    }
}
