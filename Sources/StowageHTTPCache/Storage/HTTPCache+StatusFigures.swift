import Foundation
import StowageCache

extension HTTPCache {
    /// Entries in the memory tier (variant records and bodies, as ``Statistics`` counts them).
    package var memoryEntryCount: Int { memory.count }

    /// The shared level's state for a status page: whether its last call succeeded, since when
    /// it has not answered, its failed calls, and the changes waiting to be replayed to it;
    /// `nil` without a shared level (``Configuration/sharedTier``).
    package var sharedTierState: (isHealthy: Bool, outageStart: Date?, failures: Int, pendingWrites: Int)? {
        guard let shared = levels.sharedLevel else { return nil }
        return (shared.health.isHealthy, shared.health.outageStart, shared.health.failureTotal, shared.pendingCount)
    }
}
