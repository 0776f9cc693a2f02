import Foundation

extension HTTPCacheTracing {
    /// The query parameters whose values ``redacted(_:)`` replaces: OpenTelemetry's list for
    /// `url.full` and `url.query` (`AWSAccessKeyId`, `Signature`, `sig`, `X-Goog-Signature`),
    /// the other parts of an AWS presigned URL, and the names that carry an OAuth 2.0 bearer
    /// token (RFC 6750 §2.3) or an API key. Compared without regard to case.
    public static let redactedQueryParameters: Set<String> = [
        "awsaccesskeyid", "signature", "sig", "x-goog-signature", "x-goog-credential",
        "x-amz-signature", "x-amz-credential", "x-amz-security-token",
        "access_token", "token", "api_key", "apikey", "key", "password", "secret", "client_secret",
    ]

    /// `uri` as a span may carry it (OpenTelemetry's `url.full`): user name and password in
    /// the authority become `REDACTED:REDACTED`, and the value of each of
    /// ``redactedQueryParameters`` becomes `REDACTED`, so that a trace back end never stores a
    /// credential a URL carried. The rest is kept as it was.
    public static func redacted(_ uri: String) -> String {
        var rest = Substring(uri)
        var result = ""
        if let schemeEnd = rest.range(of: "://") {
            result += rest[..<schemeEnd.upperBound]
            rest = rest[schemeEnd.upperBound...]
            let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
            var authority = rest[..<authorityEnd]
            if let at = authority.lastIndex(of: "@") {
                result += "REDACTED:REDACTED@"
                authority = authority[authority.index(after: at)...]
            }
            result += authority
            rest = rest[authorityEnd...]
        }
        guard let questionMark = rest.firstIndex(of: "?") else { return result + rest }
        result += rest[...questionMark]
        let queryAndFragment = rest[rest.index(after: questionMark)...]
        let fragmentStart = queryAndFragment.firstIndex(of: "#") ?? queryAndFragment.endIndex
        let pairs = queryAndFragment[..<fragmentStart].split(separator: "&", omittingEmptySubsequences: false)
        result += pairs.map { pair -> String in
            guard let equals = pair.firstIndex(of: "=") else { return String(pair) }
            let name = pair[..<equals]
            let decoded = (String(name).removingPercentEncoding ?? String(name)).lowercased()
            return redactedQueryParameters.contains(decoded) ? name + "=REDACTED" : String(pair)
        }.joined(separator: "&")
        return result + queryAndFragment[fragmentStart...]
    }
}
