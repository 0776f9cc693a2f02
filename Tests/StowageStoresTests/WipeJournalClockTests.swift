import Foundation
import StowageCache
import StowageCore
import Testing

@testable import StowageStores

@Suite("wipe journal")
struct WipeJournalClockTests {
    @Test("the journal dates a wipe by the injected clock, and lists it pending until it ends")
    func journalFollowsTheClock() throws {
        let fixture = try PopulatedContainer()
        let started = Date(timeIntervalSince1970: 1_950_000_000)
        let journal = WipeJournal(container: fixture.container, clock: CacheClock { started })
        try journal.begin("ada")
        #expect(try journal.pending() == ["ada"])
        let data = try Data(contentsOf: journal.directory.appending(path: "ada.json"))
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(object["started"] as? Double == started.timeIntervalSinceReferenceDate)
        try journal.end("ada")
        #expect(try journal.pending().isEmpty)
    }
}
