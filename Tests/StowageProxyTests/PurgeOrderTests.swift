import Foundation
import HTTPTypes
import NIOHTTP1
import StowageHTTPCache
import StowageHTTPTestSupport
import StowageProxy
import StowageTestSupport
import Synchronization
import Testing

/// An invalidation through the proxy's admin listener is final: an origin response fetched
/// before it is never stored after the refetch that followed it (the origin here holds the
/// pre-purge response until the refetch is stored, so the race goes the bad way every time).
@Suite struct PurgeOrderTests {
    /// Per path: the first GET is held until the test opens its gate and answers `old`; every
    /// later one answers `new` at once.
    final class HeldFirstAnswers: Sendable {
        struct Race: Sendable {
            let arrived = Gate()
            let held = Gate()
        }

        private let state = Mutex<[String: (race: Race, requests: Int)]>([:])

        func race(for path: String) -> Race {
            state.withLock { state in
                if let entry = state[path] { return entry.race }
                let race = Race()
                state[path] = (race, 0)
                return race
            }
        }

        var script: TestOriginServer.Script {
            { received in
                let path = received.head.path ?? "/"
                let (race, index) = self.state.withLock { state -> (Race, Int) in
                    let race = state[path]?.race ?? Race()
                    let index = (state[path]?.requests ?? 0) + 1
                    state[path] = (race, index)
                    return (race, index)
                }
                if index == 1 {
                    race.arrived.open()
                    await race.held.wait()
                }
                return .init(
                    fields: [("Cache-Control", "max-age=600"), ("Surrogate-Key", "race")],
                    body: index == 1 ? "old" : "new"
                )
            }
        }
    }

    @Test(
        "races of a held fetch, a purge or ban, and a refetch: the held response is never stored",
        arguments: [("purge", 1_000), ("ban-prefix", 50), ("ban-tag", 50)]
    )
    func heldFetchAfterPurge(kind: String, races: Int) async throws {
        let origin = HeldFirstAnswers()
        try await ProxyHarness.run(
            configure: {
                $0.admin = .init(port: 0)
                // Only a hang-catcher: a refetch that joined the held fetch would wait this long.
                $0.cache.collapseTimeout = .seconds(5)
            },
            script: origin.script
        ) { h in
            var stale: [String] = []
            for index in 0..<races {
                let path = "/race/\(index)"
                let race = origin.race(for: path)
                let first = Task { try await h.get(path) }
                await race.arrived.wait()
                let url = h.origin.baseURL + path
                let admin: String
                switch kind {
                case "purge": admin = "/purge?url=\(url)"
                case "ban-prefix": admin = "/ban?prefix=\(url)"
                default: admin = "/ban?tag=race"
                }
                // 404 for a purge: nothing is stored yet, the fetch is under way.
                #expect([200, 404].contains(try await h.admin(.POST, admin).status))
                let refetched = try await h.get(path)
                race.held.open()
                let held = try await first.value
                let after = try await h.get(path)
                if refetched.text != "new" || held.text != "old" || after.text != "new" {
                    stale.append("\(path): refetched \(refetched.text), held \(held.text), after \(after.text)")
                    break
                }
            }
            #expect(stale.isEmpty, "\(stale)")
        }
    }
}
