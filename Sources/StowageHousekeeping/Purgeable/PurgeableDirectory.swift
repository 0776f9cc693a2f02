import Foundation
import StowageCore

/// A registered purgeable directory: where it is, when its files go, and how large it may grow.
public struct PurgeableDirectory: Sendable, Hashable, Codable {
    /// The directory relative to the container, sandbox-style: `Documents/SomePath`,
    /// `Library/Caches/feeds` (see `PurgeableDirectories/register(_:policy:sizeCap:)`).
    public var path: String
    /// When files are deleted by age.
    public var policy: PurgePolicy
    /// Over this many allocated bytes, a sweep deletes the oldest files until the directory is at
    /// half of it; `nil` for no cap (`APPurgeablePath`'s `size = 0`).
    public var sizeCap: ByteCount?

    /// Creates a registration.
    public init(path: String, policy: PurgePolicy, sizeCap: ByteCount? = nil) {
        self.path = path
        self.policy = policy
        self.sizeCap = sizeCap
    }
}
