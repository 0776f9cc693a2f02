import HTTPTypes

// RFC 9213, targeted cache control: a shared cache configured with field names such as
// `CDN-Cache-Control` follows the first of them a response carries with a valid value, and
// then ignores `Cache-Control` and `Expires`.

/// The cache directives a response gives one cache.
struct ResponseDirectives {
    /// The directives followed.
    var cacheControl: CacheControl
    /// The targeted field they come from; `nil` when they are `Cache-Control`'s.
    var targetedField: HTTPField.Name?

    /// Whether `Expires` counts (RFC 9213 §2.2: not when a targeted field is followed).
    var followsExpires: Bool { targetedField == nil }
}

extension CacheRules {
    /// RFC 9213 §2.2: the first of ``targetedFields`` present in `fields` with a valid value, for
    /// a shared cache; otherwise `Cache-Control` (`cacheControl`, parsed already). Valid means a
    /// non-empty Structured Fields dictionary (RFC 8941) whose members have the types RFC 9213
    /// §2.1 infers for their directives; see ``CacheControl/init(targeted:)``. A private cache
    /// always follows `Cache-Control`.
    func directives(of fields: HTTPFields, cacheControl: @autoclosure () -> CacheControl) -> ResponseDirectives {
        if isShared {
            for name in targetedFields {
                let lines = fields[values: name]
                guard !lines.isEmpty else { continue }
                if let targeted = CacheControl(targeted: lines.joined(separator: ", ")) {
                    return ResponseDirectives(cacheControl: targeted, targetedField: name)
                }
            }
        }
        return ResponseDirectives(cacheControl: cacheControl(), targetedField: nil)
    }

    /// The directives `stored` gives this cache; see ``directives(of:cacheControl:)``.
    func directives(of stored: StoredResponse) -> ResponseDirectives {
        guard isShared, !targetedFields.isEmpty else {
            return ResponseDirectives(cacheControl: stored.facts.cacheControl, targetedField: nil)
        }
        return directives(of: stored.response.headerFields, cacheControl: stored.facts.cacheControl)
    }
}
