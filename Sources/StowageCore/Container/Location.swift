/// One of the five places an app keeps files, with the meaning Apple's File System Programming Guide gives it.
///
/// | location | holds | backed up | purged |
/// |---|---|---|---|
/// | ``documents`` | user-created content | yes | never |
/// | ``applicationSupport`` | essential app data | yes | never |
/// | ``caches`` | re-downloadable, regenerable data | no | under storage pressure |
/// | ``preferences`` | settings (through the preferences store) | yes | never |
/// | ``temporary`` | intermediates | no | aggressively, any time |
public enum Location: String, CaseIterable, Sendable, Hashable, Codable, CustomStringConvertible {
    case documents
    case applicationSupport
    case caches
    case preferences
    case temporary

    /// When the system (or Stowage's purging) may delete what a location holds.
    public enum PurgePolicy: String, Sendable, Hashable, Codable {
        /// Never deleted behind the app's back.
        case never
        /// Deleted when the volume runs short of space.
        case underStoragePressure
        /// Deleted at any time, even while the app runs.
        case anyTime
    }

    /// Whether backups should include this location. Caches and temporary files are
    /// regenerable, so Stowage marks them excluded.
    public var isBackedUp: Bool {
        switch self {
        case .documents, .applicationSupport, .preferences: true
        case .caches, .temporary: false
        }
    }

    /// When the contents may be purged.
    public var purgePolicy: PurgePolicy {
        switch self {
        case .documents, .applicationSupport, .preferences: .never
        case .caches: .underStoragePressure
        case .temporary: .anyTime
        }
    }

    /// A short name for people, e.g. `"application support"`.
    public var description: String {
        switch self {
        case .documents: "documents"
        case .applicationSupport: "application support"
        case .caches: "caches"
        case .preferences: "preferences"
        case .temporary: "temporary"
        }
    }
}
