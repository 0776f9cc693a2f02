import Foundation
import StowageCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A container's temporary location as something a ``StorageMonitor`` purges first: the
/// entries in it not modified for ``minimumAge`` are removed (files, and directories with
/// everything below them), through descriptors, never following a symbolic link.
///
/// Newer entries stay: the app may be writing them right now. A mount point inside the
/// location (another file system, or a bind mount of the same one) stays too, with everything
/// under it, as `rm --one-file-system` leaves it: ``purgeNamingSkips(_:)`` names it
/// (`"skipped: another file system"`), and a `StorageMonitor` lists it in its report.
public struct TemporaryFiles: Purging {
    /// The container whose temporary location is purged.
    public let container: Container
    /// How long an entry must have been left alone before it goes. Default: one hour.
    public var minimumAge: Duration
    /// The clock that decides the age.
    public var clock: CacheClock

    /// Purges `container`'s temporary location of entries untouched for `minimumAge`, as
    /// `clock` tells the time.
    public init(container: Container, minimumAge: Duration = .seconds(3_600), clock: CacheClock = .system) {
        self.container = container
        self.minimumAge = minimumAge
        self.clock = clock
    }

    /// Named `temporary` in reports.
    public var purgingName: String { "temporary" }
    /// Purged first: `PurgingTier/temporary`.
    public var purgingTier: PurgingTier { .temporary }

    /// Removes the entries older than ``minimumAge``; returns the allocated bytes freed.
    ///
    /// `request.bytesToFree` does not make it remove newer entries: those may be files the app is
    /// writing right now, and losing them is not a cache miss. The monitor moves on to the
    /// caches for the rest.
    public func purge(_ request: PurgeRequest) async throws -> ByteCount {
        try await BlockingWork.run { try purge() }
    }

    /// The synchronous overload of `purge(_:)`: the same work on the calling thread.
    public func purge() throws -> ByteCount {
        try purgeNamingSkips().bytesFreed
    }

    /// ``purge(_:)``, naming the mount points it left in place.
    public func purgeNamingSkips(_ request: PurgeRequest) async throws -> PurgeOutcome {
        try await BlockingWork.run { try purgeNamingSkips() }
    }

    /// The synchronous overload of `purgeNamingSkips(_:)`: the same work on the calling thread.
    public func purgeNamingSkips() throws -> PurgeOutcome {
        let path = container.url(for: .temporary).fileSystemPath
        let descriptor = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard descriptor >= 0 else {
            if errno == ENOENT { return PurgeOutcome(bytesFreed: .zero) }
            throw StowageError.syscall(.current, "open the temporary directory", path: path)
        }
        let directory = OpenDirectory(descriptor: descriptor, path: path)
        let cutoff = clock.now().timeIntervalSince1970 - minimumAge.timeInterval
        // The removal counts what it gives back as it goes: an old directory holding a mount
        // point loses everything but the mount (and the directories on the way to it), and that
        // is freed. (Measuring each entry first and counting it only when nothing failed in it
        // reported such a directory as freeing nothing, and the monitor purged caches for it.)
        var removal = TreeRemoval(cancellation: nil, measuresFreedBytes: true)
        for entry in try directory.entries() {
            guard let status = FileStatus.at(directory.descriptor, entry.name), status.modificationTime < cutoff else {
                continue
            }
            try removal.remove(entry.name, type: entry.type, in: directory)
        }
        return PurgeOutcome(bytesFreed: removal.bytesFreed, skipped: removal.failures.filter(\.isOtherFileSystem))
    }
}
