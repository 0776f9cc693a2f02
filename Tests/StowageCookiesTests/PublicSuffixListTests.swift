import Foundation
import StowageCookies
import Testing

/// The public suffix list: the built-in one, the `.dat` format, and the system file.
@Suite struct PublicSuffixListTests {
    @Test("the built-in list knows single labels and common multi-label suffixes, not registrable domains")
    func builtIn() {
        let list = PublicSuffixList.builtIn
        for suffix in ["com", "uk", "co.uk", "com.au", "github.io", "localhost"] {
            #expect(list.isPublicSuffix(suffix))
        }
        for domain in ["example.com", "example.co.uk", "me.github.io"] { #expect(!list.isPublicSuffix(domain)) }
        #expect(list.registrableDomain(of: "www.example.co.uk") == "example.co.uk")
        #expect(list.registrableDomain(of: "a.b.example.com") == "example.com")
        #expect(list.registrableDomain(of: "127.0.0.1") == "127.0.0.1")
    }

    @Test("the .dat format: comments, wildcard and exception rules")
    func datFormat() throws {
        let list = try #require(
            PublicSuffixList(datFile: "// comment\ncom\n\n*.ck\n!www.ck\n// ===END ICANN DOMAINS===\nblogspot.com\n")
        )
        #expect(list.isPublicSuffix("anything.ck"))
        #expect(!list.isPublicSuffix("www.ck"))
        #expect(list.isPublicSuffix("blogspot.com"))
        #expect(PublicSuffixList(datFile: "// only comments\n") == nil)
    }

    @Test("the system list is Debian's publicsuffix file when installed, else the built-in list")
    func systemList() {
        let list = PublicSuffixList.system
        #expect(list.isPublicSuffix("co.uk"))
        if FileManager.default.fileExists(atPath: PublicSuffixList.debianPath) {
            // A suffix only the full list has.
            #expect(list.isPublicSuffix("x.kawasaki.jp"))
            #expect(!list.isPublicSuffix("city.kawasaki.jp"))
        }
    }
}
