import Foundation
import StowageCookies

/// `StowageTestWorker cookies …`: `arguments[0]` names the command.
enum CookiesWorkerCommand {
    /// `write FILE COUNT`: sets COUNT persistent cookies, one per site, in the cookie store at
    /// FILE, printing `set N` after each returns, so that a test can kill it mid-write.
    static func run(_ arguments: [String]) {
        guard arguments.count == 4, arguments[1] == "write", let count = Int(arguments[3]) else {
            fail("usage: StowageTestWorker cookies write FILE COUNT")
        }
        do {
            let store = try CookieStore.open(at: URL(filePath: arguments[2]))
            for index in 0..<count {
                try store.setCookie(value(index) + "; Max-Age=3600", from: url(index))
                say("set \(index)")
            }
        } catch {
            fail("\(error)")
        }
    }

    /// The site the worker's cookie number `index` comes from.
    static func url(_ index: Int) -> URL { URL(string: "http://site\(index).example/")! }

    /// The `name=value` of the worker's cookie number `index`.
    static func value(_ index: Int) -> String { "c\(index)=v\(index)-" + String(repeating: "x", count: index % 200) }
}
