import Foundation
import StowageCache
import StowageCookies
import StowageCore
import StowageHousekeeping
import StowageStores
import StowageTestSupport
import Testing

/// A user's cookie store among the other stores: wiped with the user, counted as durable
/// data, left alone by "clear caches".
@Suite struct UserCookiesTests {
    let scratch: TemporaryDirectory
    let container: Container

    init() throws {
        scratch = try TemporaryDirectory()
        container = Container(root: scratch.url, identifier: "org.stowage.tests")
    }

    /// Gives `user` two persistent cookies and a cache entry; returns the cookie file.
    func populate(_ user: String) async throws -> URL {
        let space = try UserSpaces(container: container).space(for: user)
        let cookies = try space.cookies()
        try await cookies.setCookies(
            ["a=1; Max-Age=3600", "b=2; Max-Age=3600"],
            from: URL(string: "https://example.com/")!
        )
        let cache = try space.diskCache("images")
        try await cache.setData(Data(repeating: 7, count: 10_000), forKey: "k")
        return try #require(cookies.fileURL)
    }

    @Test("the cookie store sits in the user's data directory and wipe(user:) removes it, not other users'")
    func userWipeRemovesCookies() async throws {
        let ada = try await populate("ada")
        let bob = try await populate("bob")
        #expect(ada.path.hasSuffix("users/ada/Cookies/cookies.stowcookies"))
        try await UserSpaces(container: container).wipe(user: "ada")
        #expect(!FileManager.default.fileExists(atPath: ada.path))
        #expect(FileManager.default.fileExists(atPath: bob.path))
        let reopened = try UserSpaces(container: container).space(for: "ada").cookies()
        #expect(reopened.allCookies.isEmpty)
        #expect(try UserSpaces(container: container).space(for: "bob").cookies().allCookies.count == 2)
    }

    @Test("the storage account counts each user's cookies as durable data")
    func accountingCountsCookies() async throws {
        let file = try await populate("ada")
        let account = try await StorageAccountant(container: container).account()
        let store = try #require(account.stores.first { $0.name == "cookies ada" })
        #expect(store.kind == .cookies)
        #expect(store.category == .durable)
        #expect(store.entries == 2)
        #expect(store.path == file.path)
        #expect(store.logicalBytes.rawValue == Int64(try Data(contentsOf: file).count))
    }

    @Test("clear caches empties the user's caches and leaves their cookies byte for byte")
    func notClearedByClearCaches() async throws {
        let file = try await populate("ada")
        let before = try Data(contentsOf: file)
        let report = try await ClearCaches(container: container, openStores: OpenStores()).clear()
        #expect(report.isComplete)
        #expect(try Data(contentsOf: file) == before)
        let cache = try UserSpaces(container: container).space(for: "ada").diskCache("images")
        #expect(try await cache.data(forKey: "k") == nil)
        #expect(try UserSpaces(container: container).space(for: "ada").cookies().allCookies.count == 2)
    }

    @Test(
        "an open cookie store sends nothing and stores nothing after wipe(user:), run here or in another process",
        arguments: [false, true]
    )
    func wipeReachesOpenCookieStore(inAnotherProcess: Bool) async throws {
        _ = try await populate("ada")
        _ = try await populate("bob")
        let spaces = UserSpaces(container: container)
        // The documented pattern: one shared store per user, handed to the client.
        let ada = try spaces.space(for: "ada").cookies()
        let bob = try spaces.space(for: "bob").cookies()
        let site = URL(string: "https://example.com/")!
        #expect(ada.cookieHeader(for: site) == "a=1; b=2")

        if inAnotherProcess {
            let process = TestWorker.process("stores", ["wipe", scratch.url.path, "ada"])
            try process.run()
            #expect(process.waitForExitReliably() == ChildExit(status: 0, wasSignaled: false))
        } else {
            try await spaces.wipe(user: "ada")
        }

        #expect(ada.isRemoved)
        #expect(ada.cookieHeader(for: site) == nil)
        #expect(ada.allCookies.isEmpty)
        let refused = try #require(throws: StowageError.self) { try ada.setCookie("c=3; Max-Age=3600", from: site) }
        #expect(refused.code == .notFound)
        #expect(ada.cookieHeader(for: site) == nil)
        #expect(!FileManager.default.fileExists(atPath: try #require(ada.fileURL).path), "nothing written back")
        // Bob's store sends on.
        #expect(!bob.isRemoved)
        #expect(bob.cookieHeader(for: site) == "a=1; b=2")
        // Ada signs in again: a new, empty store at the same path.
        let again = try spaces.space(for: "ada").cookies()
        #expect(again.allCookies.isEmpty)
        try await again.setCookie("d=4; Max-Age=3600", from: site)
        #expect(again.cookieHeader(for: site) == "d=4")
    }
}
