import Foundation
import StowageCore
import StowageTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A rooted container with large files in and out of backup, measured against `du -s -B1`.
@Suite("BackupAudit")
struct BackupAuditTests {
    private static let twelveMB = 12_000_000

    /// Documents/big.bin (backed up), Library/Caches/cached.bin (caches are never backed up),
    /// Documents/podcast.mp3 marked excluded, Documents/Downloads tagged with CACHEDIR.TAG.
    private func makeContainer() async throws -> (TemporaryDirectory, Container) {
        let scratch = try TemporaryDirectory()
        let container = Container(root: scratch.url)
        _ = try await container.report()  // creates the locations with their marks
        try scratch.write("Documents/big.bin", bytes: Self.twelveMB)
        try scratch.write("Library/Caches/cached.bin", bytes: Self.twelveMB)
        let podcast = try scratch.write("Documents/podcast.mp3", bytes: Self.twelveMB)
        try Marks.setExcludedFromBackup(true, at: podcast)
        let downloads = scratch.url.appending(path: "Documents/Downloads")
        try scratch.write("Documents/Downloads/episode.mp3", bytes: Self.twelveMB)
        try CacheDirectoryTag.write(in: downloads)
        try scratch.write("Documents/notes.txt", bytes: 5_000)
        try scratch.write("Library/Application Support/db.sqlite", bytes: 11_000_000)
        try scratch.symlink("Documents/to-caches", to: scratch.path + "/Library/Caches")
        #expect(mkfifo(scratch.path + "/Documents/pipe", 0o600) == 0)
        return (scratch, container)
    }

    @Test("only large files a backup would copy are listed, largest first, with container-relative paths")
    func largeFiles() async throws {
        let (scratch, container) = try await makeContainer()
        defer { withExtendedLifetime(scratch) {} }  // the directory lives until the test ends
        let audit = try await container.auditBackups()
        #expect(audit.largeFiles.map(\.path) == ["Documents/big.bin", "Library/Application Support/db.sqlite"])
        #expect(audit.largeFiles.map(\.location) == [.documents, .applicationSupport])
        #expect(audit.largeFiles.first?.logicalBytes.rawValue == Int64(Self.twelveMB))
        #expect(audit.largeFileCount == 2)
        #expect(audit.locations.allSatisfy { $0.issues.isEmpty })
    }

    @Test("backed-up and excluded bytes add up to each location's du -s -B1")
    func totalsMatchDu() async throws {
        let (scratch, container) = try await makeContainer()
        let audit = try await container.auditBackups()
        for entry in audit.locations {
            let path = container.url(for: entry.location).path(percentEncoded: false)
            let sum = entry.backedUp.allocatedBytes.rawValue + entry.excluded.allocatedBytes.rawValue
            #expect(sum == (try duAllocatedBytes(path)), "\(entry.location)")
        }
        let documents = try #require(audit.locations.first { $0.location == .documents })
        #expect(!documents.isExcluded)
        // podcast.mp3 (marked), Downloads and its episode and tag (CACHEDIR.TAG) are excluded.
        let excludedExpected =
            try duAllocatedBytes(scratch.path + "/Documents/podcast.mp3")
            + duAllocatedBytes(scratch.path + "/Documents/Downloads")
        #expect(documents.excluded.allocatedBytes.rawValue == excludedExpected)
        #expect(documents.excluded.fileCount == 3)
        #expect(documents.backedUp.otherCount == 2)  // the symbolic link and the FIFO, never followed or opened
        let caches = try #require(audit.locations.first { $0.location == .caches })
        #expect(caches.isExcluded && caches.backedUp == DiskUsage.Totals())
        #expect(audit.backedUpBytes.rawValue > 23_000_000 && audit.backedUpBytes.rawValue < 24_000_000)
    }

    @Test("the warning appears above the threshold and the thresholds are configurable")
    func thresholds() async throws {
        let (scratch, container) = try await makeContainer()
        defer { withExtendedLifetime(scratch) {} }  // the directory lives until the test ends
        let quiet = try await container.auditBackups()
        #expect(!quiet.isOverWarningThreshold && quiet.warning == nil)

        let configuration = BackupAudit.Configuration(
            largeFileThreshold: ByteCount(11_500_000),
            warningThreshold: ByteCount(20_000_000),
            maximumListedFiles: 1
        )
        let loud = try await container.auditBackups(configuration: configuration)
        #expect(loud.isOverWarningThreshold)
        #expect(loud.warning?.contains("20.00M") == true)
        #expect(loud.largeFiles.map(\.path) == ["Documents/big.bin"])
        #expect(loud.largeFileCount == 1)

        let listed = try await container.auditBackups(
            configuration: BackupAudit.Configuration(largeFileThreshold: ByteCount(1_000), maximumListedFiles: 1)
        )
        #expect(listed.largeFiles.map(\.path) == ["Documents/big.bin"])
        #expect(listed.largeFileCount == 3)  // big.bin, db.sqlite, notes.txt
    }

    @Test("a negative threshold is refused with a message naming it")
    func negativeThreshold() async throws {
        let scratch = try TemporaryDirectory()
        let configuration = BackupAudit.Configuration(largeFileThreshold: ByteCount(-1))
        await #expect {
            try await Container(root: scratch.url).auditBackups(configuration: configuration)
        } throws: { error in
            (error as? StowageError)?.code == .invalidArgument
                && (error as? StowageError)?.message.contains("large-file threshold") == true
        }
    }

    @Test("the report carries the audit, and its JSON the derived totals and warning")
    func reportCarriesAudit() async throws {
        let (scratch, container) = try await makeContainer()
        defer { withExtendedLifetime(scratch) {} }  // the directory lives until the test ends
        let report = try await container.report(backupAudit: BackupAudit.Configuration(warningThreshold: ByteCount(1)))
        #expect(report.backupAudit.largeFileCount == 2)
        let object =
            try JSONSerialization.jsonObject(with: try JSONEncoder().encode(report.backupAudit)) as? [String: Any]
        #expect(object?["isOverWarningThreshold"] as? Bool == true)
        #expect((object?["warning"] as? String)?.isEmpty == false)
        #expect(object?["backedUpBytes"] as? Int64 == report.backupAudit.backedUpBytes.rawValue)
        let decoded = try JSONDecoder().decode(BackupAudit.self, from: try JSONEncoder().encode(report.backupAudit))
        #expect(decoded == report.backupAudit)
    }

    @Test("a name that is not valid UTF-8 is judged by its own mark, never its look-alike's")
    func lookAlikeNamesReadTheirOwnMarks() async throws {
        let scratch = try TemporaryDirectory()
        let container = Container(root: scratch.url)
        _ = try await container.report()  // creates the locations with their marks
        let documents = scratch.path + "/Documents"
        // "a\u{FFFD}" is what String(cString:) makes of the bytes "a\xFF": a path built from it
        // names the other file. Each pair has one marked file; sizes tell the files apart.
        let files: [(name: [UInt8], bytes: Int, marked: Bool)] = [
            (Array("a".utf8) + [0xFF], 1_000, false), (Array("a\u{FFFD}".utf8), 2_000, true),
            (Array("b".utf8) + [0xFF], 3_000, true), (Array("b\u{FFFD}".utf8), 4_000, false),
        ]
        let directory = open(documents, O_RDONLY | O_DIRECTORY)
        try #require(directory >= 0)
        defer { close(directory) }
        for file in files {
            let descriptor = (file.name.map { CChar(bitPattern: $0) } + [0]).withUnsafeBufferPointer {
                openat(directory, $0.baseAddress!, O_WRONLY | O_CREAT | O_EXCL, 0o644)
            }
            try #require(descriptor >= 0)
            defer { close(descriptor) }
            let data = [UInt8](repeating: 0x61, count: file.bytes)
            #expect(data.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) } == file.bytes)
            if file.marked { try pythonSetXattr(under: documents, [file.name], Marks.backupAttribute, "false") }
        }
        defer { removeDeepContents(of: scratch) }  // FileManager cannot remove a name that is not UTF-8
        let audit = try await container.auditBackups(
            configuration: BackupAudit.Configuration(largeFileThreshold: .zero)
        )
        #expect(audit.locations.allSatisfy { $0.issues.isEmpty })
        #expect(Set(audit.largeFiles.map(\.logicalBytes.rawValue)) == [1_000, 4_000])
        let entry = try #require(audit.locations.first { $0.location == .documents })
        #expect(entry.excluded.logicalBytes.rawValue == 5_000)
    }

    @Test("a marked file whose path is longer than PATH_MAX is excluded, with no ENAMETOOLONG issue")
    func markBeyondPathMax() async throws {
        let scratch = try TemporaryDirectory()
        let container = Container(root: scratch.url)
        _ = try await container.report()  // creates the locations with their marks
        // 25 directories of 200 bytes: a path of over 5,000 bytes, which lgetxattr refuses.
        let names = (0..<25).map { String(repeating: Character(String($0 % 10)), count: 200) }
        close(try makeChain(under: scratch.path + "/Documents", names, file: "marked", bytes: 20_000))
        defer { removeDeepContents(of: scratch) }
        let components = (names + ["marked"]).map { Array($0.utf8) }
        try pythonSetXattr(under: scratch.path + "/Documents", components, Marks.backupAttribute, "false")
        let audit = try await container.auditBackups(
            configuration: BackupAudit.Configuration(largeFileThreshold: .zero)
        )
        let entry = try #require(audit.locations.first { $0.location == .documents })
        #expect(entry.issues.isEmpty, "\(entry.issues.map(\.message))")
        #expect(entry.excluded.fileCount == 1)
        #expect(entry.excluded.logicalBytes.rawValue == 20_000)
        #expect(audit.largeFiles.isEmpty)
    }
}
