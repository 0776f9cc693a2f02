import HTTPTypes

extension HTTPField.Name {
    /// `Stowage-Cache-Trace`: the opt-in debug field that carries ``CachedResponse/trace``.
    public static let stowageCacheTrace = HTTPField.Name("Stowage-Cache-Trace")!

    /// Connection-specific fields a cache never passes on to its client (RFC 9110 §7.6.1).
    public static let hopByHop: [HTTPField.Name] = [
        .connection, .transferEncoding, .upgrade, .te, .proxyAuthenticate,
        HTTPField.Name("Keep-Alive")!, HTTPField.Name("Proxy-Connection")!,
    ]
}

extension CachedResponse {
    /// The fields of the response a server sends its client for this answer: the response's
    /// own without hop-by-hop fields (those `Connection` names too, RFC 9110 §7.6.1), with
    /// `Cache-Status` (RFC 9211) and, with `includingTrace`, `Stowage-Cache-Trace`.
    ///
    /// The caching proxy and the server middlewares render their responses with it.
    public func clientFields(includingTrace: Bool) -> HTTPFields {
        var fields = response.headerFields
        for name in fields[values: .connection].flatMap({ $0.split(separator: ",") }) {
            if let named = HTTPField.Name(String(name.trimmingPrefix(while: { $0 == " " }))) {
                fields[values: named] = []
            }
        }
        for name in HTTPField.Name.hopByHop { fields[values: name] = [] }
        fields[.cacheStatus] = status.description
        if includingTrace {
            // Field values are visible ASCII (RFC 9110 §5.5): "§" becomes "section ".
            var text = ""
            for scalar in trace.joined(separator: " | ").unicodeScalars {
                if scalar == "§" {
                    text += "section "
                } else {
                    text.unicodeScalars.append(scalar.isASCII && scalar.value >= 0x20 ? scalar : "?")
                }
            }
            fields[.stowageCacheTrace] = text
        }
        return fields
    }

    /// Whether the client's response to a `method` request carries this answer's body: not for
    /// `HEAD`, 204 and 304 (RFC 9110 §9.3.2, §15.3.5, §15.4.5).
    public func hasContent(forMethod method: HTTPRequest.Method) -> Bool {
        method != .head && response.status.code != 304 && response.status.code != 204
    }
}
