import Foundation
import StowageCore
import StowageTestSupport
import Synchronization
import Testing

@testable import StowageHousekeeping

@Suite("cache cleaner")
struct CacheCleanerTests {
    // MARK: - Cleaning and progress

    @Test("Path + Entries delete what the wildcards match, and the four phases report real progress")
    func wildcardsAndPhases() async throws {
        let fixture = try TestContainer()
        let base = "Library/Caches/images"
        for name in ["a.jpg", "b.jpg", "c.png", "keep.txt", ".hidden.jpg"] { try fixture.file("\(base)/\(name)") }
        try fixture.file("\(base)/thumbs/t1.jpg", bytes: 10_000)
        try fixture.file("\(base)/thumbs/t2.gif")
        try fixture.file("\(base)/x/y.jpg")
        let expected = ["a.jpg", "b.jpg", ".hidden.jpg", "c.png", "thumbs/t1.jpg", "x/y.jpg"].reduce(Int64(0)) {
            $0 + allocatedBytes(fixture.url("\(base)/\($1)"))
        }
        let manifest = CleanManifest(tasks: [.path(base, entries: ["*.jpg", "*/*.jpg", "?.png"])])

        var events: [CleanEvent] = []
        for try await event in CacheCleaner(container: fixture.container).run(manifest) { events.append(event) }

        #expect(fixture.files(under: base) == ["keep.txt", "thumbs/t2.gif"])
        let phases = events.map(\.phase)
        #expect(phases.first == .preCalculating && phases.last == .done)
        #expect(phases == phases.sorted { $0.order < $1.order }, "phases never go back: \(phases)")
        for phase in [CleanPhase.preCalculating, .cleaning, .postCalculating] {
            let fractions = events.filter { $0.phase == phase }.map(\.fraction)
            #expect(fractions.first == 0 && fractions.last == 1, "\(phase): \(fractions)")
            #expect(fractions == fractions.sorted(), "\(phase) fractions only grow")
        }
        #expect(events.contains { if case .cleaning(_, let task) = $0 { task == "Path '\(base)'" } else { false } })
        guard case .done(let report) = events.last else { throw TestFailure("no report") }
        #expect(report.bytesFreed == ByteCount(expected), "freed = before − after")
        #expect(report.tasks[0].entriesRemoved == 6, "the six matched files")
        #expect(report.isComplete && report.errors.isEmpty)
    }

    @Test("no Entries means everything inside; a Path naming a file deletes the file; missing paths free nothing")
    func wholeDirectoryAndFile() async throws {
        let fixture = try TestContainer()
        try fixture.file("Library/Caches/web/a")
        try fixture.file("Library/Caches/web/deep/b")
        try fixture.file("Documents/log.txt")
        try fixture.file("Documents/keep.txt")
        let report = try await CacheCleaner(container: fixture.container).clean(
            CleanManifest(tasks: [
                .path("Library/Caches/web", entries: []), .path("Documents/log.txt", entries: []),
                .path("tmp/never-created", entries: ["*"]),
            ])
        )
        #expect(fixture.files(under: "Library/Caches/web").isEmpty && fixture.exists("Library/Caches/web"))
        #expect(fixture.files(under: "Documents") == ["keep.txt"])
        #expect(report.isComplete)
        #expect(report.tasks[2].bytesFreed == .zero && report.tasks[2].error == nil)
    }

    @Test("cleaning the whole caches location keeps its CACHEDIR.TAG")
    func cachesTagStays() async throws {
        let fixture = try TestContainer()
        _ = try await fixture.container.directory(for: .caches)
        try fixture.file("Library/Caches/x/y")
        _ = try await CacheCleaner(container: fixture.container).clean(
            CleanManifest(tasks: [.path("Library/Caches", entries: [])])
        )
        #expect(fixture.files(under: "Library/Caches") == ["CACHEDIR.TAG"])
    }

    @Test("a dry run deletes nothing and reports what would be freed")
    func dryRun() async throws {
        let fixture = try TestContainer()
        try fixture.file("Library/Caches/a/1", bytes: 50_000)
        try fixture.file("Library/Caches/a/2", bytes: 50_000)
        let expected = allocatedBytes(fixture.url("Library/Caches/a/1")) * 2
        let report = try await CacheCleaner(container: fixture.container).clean(
            CleanManifest(tasks: [.path("Library/Caches/a", entries: ["*"])]),
            dryRun: true
        )
        #expect(fixture.files(under: "Library/Caches/a") == ["1", "2"])
        #expect(report.isDryRun && report.bytesFreed == ByteCount(expected))
        #expect(report.tasks[0].entriesRemoved == 0 && report.tasks[0].targets.count == 2)
    }

    @Test("overlapping tasks count each file once")
    func overlappingTasks() async throws {
        let fixture = try TestContainer()
        try fixture.file("Library/Caches/a/b/file", bytes: 40_000)
        let bytes = allocatedBytes(fixture.url("Library/Caches/a/b/file"))
        let report = try await CacheCleaner(container: fixture.container).clean(
            CleanManifest(tasks: [
                .path("Library/Caches/a/b", entries: []), .path("Library/Caches/a", entries: ["b/*"]),
            ])
        )
        #expect(report.bytesFreed == ByteCount(bytes))
    }

    // MARK: - Safety

    @Test("each unsafe path is refused with a typed error naming the task, and the good tasks still run")
    func refusals() async throws {
        let fixture = try TestContainer()
        let outside = try TemporaryDirectory()
        try Data("precious".utf8).write(to: outside.url.appending(path: "precious"))
        try fixture.symlink("Library/Caches/out", to: outside.path)  // absolute link out
        try fixture.symlink("Library/Caches/up", to: "../../..")  // relative link above the root
        try fixture.symlink("Library/Caches/loop1", to: "loop2")
        try fixture.symlink("Library/Caches/loop2", to: "loop1")
        try fixture.symlink("Library/Caches/alias", to: "real")  // stays inside: allowed
        try fixture.file("Library/Caches/real/r")
        try fixture.file("Library/Caches/good/g")
        try fixture.symlink("Library/Caches/good/link-out", to: outside.path)  // an entry: removed as a link

        let report = try await CacheCleaner(container: fixture.container).clean(
            CleanManifest(tasks: [
                .path(outside.path, entries: []),
                .path("Library/Caches/../../x", entries: []),
                .path("Library/Caches/out", entries: ["*"]),
                .path("Library/Caches/up/etc", entries: []),
                .path("Library/Caches/loop1", entries: []),
                .path("Library/Caches/good", entries: []),
                .path("Library/Caches/alias", entries: ["*"]),
                .path("Library/Caches/real", entries: ["../*"]),
            ])
        )

        let codes = report.tasks.map { $0.error?.code }
        #expect(
            codes == [
                .pathEscapesRoot, .pathEscapesRoot, .pathEscapesRoot, .pathEscapesRoot, .invalidArgument, nil, nil,
                .pathEscapesRoot,
            ]
        )
        for (index, task) in report.tasks.enumerated() where task.error != nil {
            #expect(task.error?.message.hasPrefix("task \(index + 1) (") == true, "\(task.error!.message)")
        }
        #expect(report.tasks[4].error?.message.contains("loop") == true)
        #expect(report.tasks[3].error?.message.contains("'../../..'") == true, "names the link's target")
        #expect(FileManager.default.fileExists(atPath: outside.url.appending(path: "precious").path))
        #expect(fixture.files(under: "Library/Caches/good").isEmpty, "the link inside was removed, not followed")
        #expect(fixture.files(under: "Library/Caches/real").isEmpty, "a link that stays inside is followed")
        #expect(report.errors.count == 6)
    }

    // MARK: - Handlers

    @Test("Class + Selectors call registered handlers; an unknown or failing handler fails only its task")
    func handlers() async throws {
        let fixture = try TestContainer()
        try fixture.file("Library/Caches/store/blob", bytes: 30_000)
        let bytes = allocatedBytes(fixture.url("Library/Caches/store/blob"))
        try fixture.file("tmp/after/x")
        let calls = Mutex<[String]>([])
        var handlers = CleanHandlers()
        let storeFile = fixture.url("Library/Caches/store/blob")
        handlers.register(className: "Store", selector: "clearDisk", measuring: ["Library/Caches/store"]) {
            calls.withLock { $0.append("clearDisk") }
            try FileManager.default.removeItem(at: storeFile)
        }
        handlers.register(className: "Store", selector: "clearMemory") { calls.withLock { $0.append("clearMemory") } }
        handlers.register(className: "Broken", selector: "explode") {
            throw StowageError(code: .ioError, message: "the store is locked")
        }
        let report = try await CacheCleaner(container: fixture.container, handlers: handlers).clean(
            CleanManifest(tasks: [
                .handler(className: "Store", selectors: ["clearMemory", "clearDisk"]),
                .handler(className: "Nobody", selectors: ["clear"]),
                .handler(className: "Store", selectors: ["clearMemory", "missing"]),
                .handler(className: "Broken", selectors: ["explode"]),
                .path("tmp/after", entries: []),
            ])
        )
        #expect(calls.withLock { $0 } == ["clearMemory", "clearDisk"], "a task with a missing selector runs none")
        #expect(report.tasks[0].isSuccess && report.tasks[0].bytesFreed == ByteCount(bytes))
        #expect(report.tasks[1].error?.code == .notFound)
        #expect(report.tasks[1].error?.message.contains("Nobody.clear") == true)
        #expect(report.tasks[2].error?.message.contains("Store.missing") == true)
        #expect(report.tasks[3].error?.message == "the store is locked")
        #expect(report.tasks[4].isSuccess && fixture.files(under: "tmp/after").isEmpty)
        #expect(report.errors.count == 3)
    }

    // MARK: - Cancellation

    @Test("cancellation while a task runs stops the clean before the next task: its files are all left")
    func cancellationBetweenTasks() async throws {
        let fixture = try TestContainer()
        try fixture.manyFiles("Library/Caches/big", directories: 10, filesPerDirectory: 100)
        let consumerCancelled = Atomic<Bool>(false)
        let cancelled = Gate()
        defer { cancelled.open() }  // a consumer that never cancels must not leave the task held
        var handlers = CleanHandlers()
        // The first task waits until the consumer has cancelled, so the cancellation is
        // certain to arrive while the clean is running, whatever the machine's load.
        handlers.register(className: "Gate", selector: "wait") {
            await cancelled.wait()
        }
        let cleaner = CacheCleaner(container: fixture.container, handlers: handlers)
        let manifest = CleanManifest(tasks: [
            .handler(className: "Gate", selectors: ["wait"]), .path("Library/Caches/big", entries: []),
        ])
        let task = Task {
            for try await event in cleaner.run(manifest) {
                if case .cleaning(_, let name) = event, name.contains("Gate") {
                    withUnsafeCurrentTask { $0?.cancel() }
                    consumerCancelled.store(true, ordering: .releasing)
                    cancelled.open()
                }
            }
        }
        await #expect(throws: CancellationError.self) { try await task.value }
        let cancelledByConsumer = consumerCancelled.load(ordering: .acquiring)
        #expect(cancelledByConsumer)
        #expect(fixture.files(under: "Library/Caches/big").count == 1_000)
    }

    @Test("cancellation during a large task stops it between files with CancellationError and no report")
    func cancellationMidTask() async throws {
        let fixture = try TestContainer()
        // Made off Swift's cooperative threads: thousands of file creations would hold one.
        try await BlockingWork.run {
            try fixture.manyFiles("Library/Caches/big", directories: 30, filesPerDirectory: 200)
        }
        let cleaner = CacheCleaner(container: fixture.container)
        let manifest = CleanManifest(tasks: [.path("Library/Caches/big", entries: [])])
        let sawCleaning = Mutex(false)
        let task = Task {
            for try await event in cleaner.run(manifest) {
                if case .cleaning(let fraction, _) = event, fraction > 0 {
                    sawCleaning.withLock { $0 = true }
                    withUnsafeCurrentTask { $0?.cancel() }
                }
                if case .done = event { Issue.record("a cancelled clean delivered its report") }
            }
        }
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(sawCleaning.withLock { $0 })
        // Cleaning had begun; how far it got before the cancellation arrived depends on the load.
        #expect(fixture.files(under: "Library/Caches/big").count < 6_000)
    }
}

extension CleanPhase {
    var order: Int {
        switch self {
        case .preCalculating: 0
        case .cleaning: 1
        case .postCalculating: 2
        case .done: 3
        }
    }
}
