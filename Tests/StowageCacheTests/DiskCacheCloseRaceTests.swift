import Foundation
import StowageCache
import StowageCore
import StowageTestSupport
import Synchronization
import Testing

/// `DiskCache.close()` racing writers: a write that returned is committed by the close, never
/// staged after its final flush and lost.
@Suite("DiskCache close racing writes")
struct DiskCacheCloseRaceTests {
    @Test("every write acknowledged while close() runs is in the index a new handle opens")
    func acknowledgedWritesSurviveARacingClose() throws {
        var configuration = DiskCache.Configuration(name: "race")
        // Only close() commits: a write staged after its flush would be lost.
        configuration.durability = .deferred(maximumDelay: .seconds(60))
        configuration.deferredCommitClock = SteppedClock()  // never advanced
        var lost: [String] = []
        for round in 0..<60 {
            let scratch = try TemporaryDirectory()
            let directory = scratch.url.appending(path: "cache", directoryHint: .isDirectory)
            let cache = try DiskCache(directory: directory, configuration: configuration)
            let acknowledged = Mutex<[String]>([])
            DispatchQueue.concurrentPerform(iterations: 5) { worker in
                if worker == 0 {
                    Thread.sleep(forTimeInterval: 0.002 * Double(round % 5))
                    try? cache.close()
                    return
                }
                for index in 0..<400 {
                    let key = "w\(worker)-\(index)"
                    do {
                        try cache.setData(Data(key.utf8), forKey: key)
                    } catch {
                        return  // closed: the rest are refused, as they should be
                    }
                    acknowledged.withLock { $0.append(key) }
                }
            }
            try cache.close()
            let reopened = try DiskCache(directory: directory, configuration: configuration)
            for key in acknowledged.withLock({ $0 }) where try reopened.data(forKey: key) != Data(key.utf8) {
                lost.append("round \(round): \(key)")
            }
            try reopened.close()
        }
        #expect(lost.isEmpty, "acknowledged writes lost: \(lost.prefix(10)) (\(lost.count) in all)")
    }
}
