import Foundation
import StowageTestSupport
import Testing

@testable import StowageCore

#if canImport(Glibc)
import Glibc
#endif

/// The measuring walks keep the directories they read on a stack of their own: a tree deeper
/// than a thread's stack allows is measured, not a crash (SIGSEGV).
@Suite("Deep trees")
struct DeepTreeWalkTests {
    private static let depth = 2_500
    private static let fileBytes = 5_000

    /// `depth` directories named `d`, one inside the other (a 5,000-byte path, longer than
    /// `PATH_MAX`), with a file at the bottom; descriptors enough for one per level.
    private func makeDeepTree(_ name: String = #function) throws -> TemporaryDirectory {
        raiseDescriptorLimit(toAtLeast: Self.depth + 256)
        let scratch = try TemporaryDirectory(name)
        close(
            try makeChain(
                under: scratch.path,
                Array(repeating: "d", count: Self.depth),
                file: "leaf",
                bytes: Self.fileBytes
            )
        )
        return scratch
    }

    @Test("DiskUsage measures a tree 2,500 levels deep on a thread with a 256 KiB stack, as du does")
    func diskUsageDeepTreeOnSmallStack() async throws {
        let scratch = try makeDeepTree()
        defer { removeDeepContents(of: scratch) }
        let url = scratch.url
        // The walk that recursed once per level overflowed this stack (SIGSEGV, the test process gone).
        let usage = try await onSmallStack { try DiskUsage.measure(url) }
        #expect(usage.issues.isEmpty, "\(usage.issues.prefix(3))")
        #expect(usage.directoryCount == Self.depth + 1)
        #expect(usage.fileCount == 1)
        #expect(usage.logicalBytes.rawValue == Int64(Self.fileBytes))
        #expect(usage.allocatedBytes.rawValue == (try duAllocatedBytes(scratch.path)))
    }

    @Test("the removal walks' measure (TreeMeasure) goes 2,500 levels deep on a thread with a 256 KiB stack")
    func treeMeasureDeepTreeOnSmallStack() async throws {
        let scratch = try makeDeepTree()
        defer { removeDeepContents(of: scratch) }
        let path = scratch.path
        // The measure that recursed once per level overflowed this stack, as the walks above did.
        let totals = try await onSmallStack {
            var measure = TreeMeasure(cancellation: nil)
            return try measure.measure("d", in: try OpenDirectory.open(path: path))
        }
        #expect(totals.entries == Self.depth + 1)
        var status = stat()
        #expect(lstat(path, &status) == 0)
        #expect(totals.bytes == (try duAllocatedBytes(path)) - Int64(status.st_blocks) * 512)
    }

    @Test("the backup audit walks a tree 2,500 levels deep on a thread with a 256 KiB stack")
    func backupAuditDeepTreeOnSmallStack() async throws {
        let scratch = try makeDeepTree()
        defer { removeDeepContents(of: scratch) }
        let path = scratch.path
        let audit = try await onSmallStack {
            var walker = BackupAuditWalker(
                configuration: BackupAudit.Configuration(largeFileThreshold: .zero),
                cancellation: nil
            )
            return try walker.audit(.documents, at: path, shownAs: "Documents")
        }
        #expect(audit.issues.isEmpty, "\(audit.issues.prefix(3))")
        #expect(audit.backedUp.directoryCount == Self.depth + 1)
        #expect(audit.backedUp.fileCount == 1)
        #expect(audit.excluded == DiskUsage.Totals())
        #expect(audit.backedUp.allocatedBytes.rawValue == (try duAllocatedBytes(path)))
    }
}
