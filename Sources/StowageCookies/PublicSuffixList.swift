import Foundation

/// The public suffixes (`com`, `co.uk`, `github.io` …) under which no site may set a cookie for
/// all the others: RFC 6265 §5.3 step 5, with the rules of <https://publicsuffix.org/list/>.
///
/// ``system`` reads the list the Debian/Ubuntu `publicsuffix` package installs
/// (`/usr/share/publicsuffix/public_suffix_list.dat`) when it is there, and falls back to
/// ``builtIn`` otherwise. Whatever the list, ``CookieStore`` also refuses a `Domain` of a single
/// label (`Domain=com`, `Domain=localhost`) unless it is the request's host itself.
public struct PublicSuffixList: Sendable {
    private var rules: Set<String>
    private var wildcards: Set<String>
    private var exceptions: Set<String>

    /// Where Debian's and Ubuntu's `publicsuffix` package installs the list.
    public static let debianPath = "/usr/share/publicsuffix/public_suffix_list.dat"

    /// The suffixes of the built-in list: the multi-label suffixes most sites live under.
    ///
    /// Country second levels: `co.uk`, `org.uk`, `ac.uk`, `gov.uk`, `me.uk`, `ltd.uk`, `plc.uk`,
    /// `net.uk`, `com.au`, `net.au`, `org.au`, `edu.au`, `gov.au`, `co.nz`, `org.nz`, `net.nz`,
    /// `co.jp`, `ne.jp`, `or.jp`, `ac.jp`, `go.jp`, `co.kr`, `or.kr`, `com.br`, `net.br`,
    /// `org.br`, `com.cn`, `net.cn`, `org.cn`, `gov.cn`, `com.tw`, `com.hk`, `com.sg`, `com.mx`,
    /// `com.ar`, `com.tr`, `co.in`, `net.in`, `org.in`, `co.za`, `co.il`, `com.ua`, `co.id`,
    /// `com.my`, `com.ph`, `com.vn`, `com.pl`, `com.es`; and hosting suffixes where each
    /// subdomain is another party's site: `github.io`, `gitlab.io`, `herokuapp.com`,
    /// `appspot.com`, `blogspot.com`, `cloudfront.net`, `azurewebsites.net`, `pages.dev`,
    /// `workers.dev`, `netlify.app`, `vercel.app`, `web.app`, `firebaseapp.com`,
    /// `s3.amazonaws.com`, `fly.dev`, `onrender.com`. Every single label is a suffix as well.
    public static let builtInSuffixes: [String] = [
        "co.uk", "org.uk", "ac.uk", "gov.uk", "me.uk", "ltd.uk", "plc.uk", "net.uk",
        "com.au", "net.au", "org.au", "edu.au", "gov.au", "co.nz", "org.nz", "net.nz",
        "co.jp", "ne.jp", "or.jp", "ac.jp", "go.jp", "co.kr", "or.kr", "com.br", "net.br",
        "org.br", "com.cn", "net.cn", "org.cn", "gov.cn", "com.tw", "com.hk", "com.sg", "com.mx",
        "com.ar", "com.tr", "co.in", "net.in", "org.in", "co.za", "co.il", "com.ua", "co.id",
        "com.my", "com.ph", "com.vn", "com.pl", "com.es",
        "github.io", "gitlab.io", "herokuapp.com", "appspot.com", "blogspot.com", "cloudfront.net",
        "azurewebsites.net", "pages.dev", "workers.dev", "netlify.app", "vercel.app", "web.app",
        "firebaseapp.com", "s3.amazonaws.com", "fly.dev", "onrender.com",
    ]

    /// The built-in list (``builtInSuffixes``, plus every single label).
    public static let builtIn = PublicSuffixList(rules: builtInSuffixes)

    /// The list at ``debianPath`` when it is installed and readable, else ``builtIn``.
    public static let system: PublicSuffixList = {
        guard let data = FileManager.default.contents(atPath: debianPath),
            let list = PublicSuffixList(datFile: String(decoding: data, as: UTF8.self)), list.rules.count > 100
        else { return builtIn }
        return list
    }()

    /// A list of plain rules (no `*.` or `!` rules).
    public init(rules: [String]) {
        self.rules = Set(rules.map { $0.lowercased() })
        wildcards = []
        exceptions = []
    }

    /// A list from the text of a `public_suffix_list.dat` file: one rule a line, `//` comments,
    /// `*.` wildcard rules and `!` exception rules. A non-ASCII rule (`公司.cn`) is kept in its
    /// Unicode form and in Punycode (`xn--55qx5d.cn`), the form request hosts arrive in.
    ///
    /// - Returns: `nil` when the text holds no rule.
    public init?(datFile text: String) {
        var rules = Set<String>()
        var wildcards = Set<String>()
        var exceptions = Set<String>()
        for line in text.split(whereSeparator: \.isNewline) {
            let rule = line.split(whereSeparator: \.isWhitespace).first.map(String.init) ?? ""
            if rule.isEmpty || rule.hasPrefix("//") { continue }
            if rule.hasPrefix("!") {
                exceptions.formUnion(Self.spellings(rule.dropFirst()))
            } else if rule.hasPrefix("*.") {
                wildcards.formUnion(Self.spellings(rule.dropFirst(2)))
            } else {
                rules.formUnion(Self.spellings(rule[...]))
            }
        }
        guard !(rules.isEmpty && wildcards.isEmpty) else { return nil }
        self.rules = rules
        self.wildcards = wildcards
        self.exceptions = exceptions
    }

    /// A rule lowercased and, when it is not ASCII, in Punycode as well.
    private static func spellings(_ rule: Substring) -> [String] {
        let lowered = rule.lowercased()
        guard !lowered.utf8.allSatisfy({ $0 < 0x80 }), let ascii = CookieMatching.asciiHost(lowered) else {
            return [lowered]
        }
        return [lowered, ascii]
    }

    /// Whether `domain` (lowercased, no leading dot) is a public suffix. A single label always
    /// is: that is the list's implicit `*` rule.
    public func isPublicSuffix(_ domain: String) -> Bool {
        guard let dot = domain.firstIndex(of: ".") else { return true }
        if exceptions.contains(domain) { return false }
        if rules.contains(domain) { return true }
        return wildcards.contains(String(domain[domain.index(after: dot)...]))
    }

    /// The registrable domain of `host`: its public suffix and one label more (`example.co.uk`
    /// for `www.example.co.uk`); `host` itself when it is a suffix or an IP address.
    public func registrableDomain(of host: String) -> String {
        guard !CookieMatching.isIPAddress(host) else { return host }
        let labels = host.split(separator: ".")
        guard labels.count > 1 else { return host }
        for start in 1..<labels.count {
            let suffix = labels[start...].joined(separator: ".")
            if isPublicSuffix(suffix) { return labels[(start - 1)...].joined(separator: ".") }
        }
        return host
    }
}
