import Foundation
import HTTPTypes
import StowageHTTPCache

/// A fixed "now" for the pure-logic tests: 2023-11-14T22:13:20Z.
let t0 = Date(timeIntervalSince1970: 1_700_000_000)

func fields(_ pairs: [(String, String)]) -> HTTPFields {
    var fields = HTTPFields()
    for (name, value) in pairs { fields.append(HTTPField(name: HTTPField.Name(name)!, value: value)) }
    return fields
}

func request(
    _ method: HTTPRequest.Method = .get,
    _ path: String = "/resource",
    _ pairs: [(String, String)] = []
) -> HTTPRequest {
    HTTPRequest(method: method, scheme: "http", authority: "origin.test", path: path, headerFields: fields(pairs))
}

func response(_ status: Int = 200, _ pairs: [(String, String)] = [], date: Date? = t0) -> HTTPResponse {
    var all = pairs
    if let date, !pairs.contains(where: { $0.0.lowercased() == "date" }) {
        all.append(("Date", HTTPDate.format(Int64(date.timeIntervalSince1970))))
    }
    return HTTPResponse(status: .init(code: status), headerFields: fields(all))
}

func stored(
    _ response: HTTPResponse,
    requestTime: Date = t0,
    responseTime: Date = t0,
    for request: HTTPRequest = request(),
    rules: CacheRules = CacheRules(kind: .private)
) -> StoredResponse {
    StoredResponse(
        response: response,
        requestTime: requestTime,
        responseTime: responseTime,
        varyingFields: rules.varyingFields(of: response, request: request)
    )
}

func httpDate(_ time: Date) -> String { HTTPDate.format(Int64(time.timeIntervalSince1970)) }

let privateRules = CacheRules(kind: .private)
let sharedRules = CacheRules(kind: .shared)
