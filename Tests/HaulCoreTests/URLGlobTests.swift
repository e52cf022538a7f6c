import Testing
@testable import HaulCore

/// curl's URL globbing (`URLGlob`): the series a pattern stands for, in curl's order, the names `#N` makes,
/// and the patterns refused, each in one line.
@Suite struct URLGlobTests {
    private func urls(_ pattern: String) throws -> [String] {
        try URLGlob(pattern).map(\.url)
    }

    @Test func rangesCountLettersAndLists() throws {
        #expect(try urls("http://h/f[1-3].bin") == ["http://h/f1.bin", "http://h/f2.bin", "http://h/f3.bin"])
        #expect(try urls("http://h/[001-003]") == ["http://h/001", "http://h/002", "http://h/003"])
        // The width is the first number's: 098 to 100 stay three digits, and past it a number is as long as it is.
        #expect(try urls("http://h/[098-100]") == ["http://h/098", "http://h/099", "http://h/100"])
        #expect(try urls("http://h/[08-100:46]") == ["http://h/08", "http://h/54", "http://h/100"])
        #expect(try urls("http://h/[a-e:2]") == ["http://h/a", "http://h/c", "http://h/e"])
        #expect(try urls("http://h/[X-Z]") == ["http://h/X", "http://h/Y", "http://h/Z"])
        #expect(try urls("http://h/[1-10:5]") == ["http://h/1", "http://h/6"])
        #expect(try urls("http://{one,two,}.example/") == ["http://one.example/", "http://two.example/", "http://.example/"])
        #expect(try urls("http://h/[7-7]") == ["http://h/7"])
    }

    /// Several globs give every combination, the last varying fastest; `#N` are the globs' values in order.
    @Test func severalGlobsInCurlsOrder() throws {
        let glob = try URLGlob("http://{a,b}.h/[1-2]/{x,y}")
        #expect(glob.count == 8 && glob.globs == 3)
        #expect(glob.map(\.url) == [
            "http://a.h/1/x", "http://a.h/1/y", "http://a.h/2/x", "http://a.h/2/y",
            "http://b.h/1/x", "http://b.h/1/y", "http://b.h/2/x", "http://b.h/2/y",
        ])
        #expect(glob[5].values == ["b", "1", "y"])
        #expect(URLGlob.name("file_#1_#2#3.jpg", values: glob[5].values) == "file_b_1y.jpg")
        // A `#` before no glob's number stays, as curl leaves it.
        #expect(URLGlob.name("#4-#0-#x-#12-##1", values: ["a", "b", "c"]) == "#4-#0-#x-#12-#a")
        #expect(URLGlob.usesValues("x#2", globs: 3) && !URLGlob.usesValues("x#4", globs: 3))
        #expect(!URLGlob.usesValues("x.bin", globs: 1))
    }

    @Test func escapesAndBracketsThatAreNoGlobs() throws {
        #expect(try urls(#"http://h/a\[1-2\]\{b\}"#) == ["http://h/a[1-2]{b}"])
        // A backslash before anything else stays; inside a list it takes the next byte as it is.
        #expect(try urls(#"http://h/a\b{x\,y,z\}}"#) == [#"http://h/a\bx,y"#, #"http://h/a\bz}"#])
        #expect(try urls("http://h/a[]b") == ["http://h/a[]b"])
        // An IPv6 literal host is a host, and globs after it still count.
        #expect(try urls("http://[::1]:8080/f[1-2]") == ["http://[::1]:8080/f1", "http://[::1]:8080/f2"])
        #expect(try urls("https://[fe80::1%25eth0]/x") == ["https://[fe80::1%25eth0]/x"])
        #expect(!URLGlob.mayGlob("http://127.0.0.1:8080/files/download?small.bin"))
        #expect(URLGlob.mayGlob("http://h/[1-2]") && URLGlob.mayGlob(#"http://h/\x"#))
    }

    @Test(arguments: [
        ("http://h/a]b", "unmatched close brace/bracket at character 11 of the URL"),
        ("http://h/a}b", "unmatched close brace/bracket at character 11 of the URL"),
        ("http://h/{a,b", "unmatched brace at character 10 of the URL"),
        ("http://h/{a,[1-2]}", "nested brace at character 13 of the URL"),
        ("http://h/{a]}", "unexpected close bracket at character 12 of the URL"),
        ("http://h/[1-2", "unmatched bracket at character 10 of the URL"),
        ("http://h/[3-1]", "bad range at character 10 of the URL"),
        ("http://h/[1-5:0]", "bad range at character 10 of the URL"),
        ("http://h/[1-5:9]", "bad range at character 10 of the URL"),
        ("http://h/[2-2:2]", "bad range at character 10 of the URL"),
        ("http://h/[a-Z]", "bad range at character 10 of the URL"),
        ("http://h/[z-a]", "bad range at character 10 of the URL"),
        ("http://h/[1-x]", "bad range at character 10 of the URL"),
        ("http://h/[x]", "bad range specification at character 10 of the URL"),
        ("http://h/[-1-3]", "bad range specification at character 10 of the URL"),
        ("http://h/[1-99999999999999999999]", "bad range at character 10 of the URL"),
    ])
    func aMalformedPatternIsNamed(pattern: String, message: String) {
        #expect(throws: URLGlob.Problem(message: message)) { try URLGlob(pattern) }
    }

    /// A series past the limit is refused from its ranges alone, before any URL is made: a billion, and a count
    /// past 64 bits, take no memory and no time.
    @Test func aSeriesPastTheLimitIsRefusedUnmade() throws {
        #expect(throws: URLGlob.Problem(message: "expands to 1000000000 URLs, more than the 100000 one pattern may give (-g turns globbing off)")) {
            try URLGlob("http://h/[1-1000000000]")
        }
        #expect(throws: URLGlob.Problem(message: "expands to more than \(Int.max) URLs, more than the 100000 one pattern may give (-g turns globbing off)")) {
            try URLGlob("http://h/[1-4000000000][1-4000000000][1-4000000000]")
        }
        #expect(throws: URLGlob.Problem(message: "expands to 100001 URLs, more than the 100000 one pattern may give (-g turns globbing off)")) {
            try URLGlob("http://h/[1-100001]")
        }
        let most = try URLGlob("http://h/[1-100000]")
        #expect(most.count == 100_000 && most[99_999].url == "http://h/100000")
        #expect(throws: URLGlob.Problem(message: "more than 100 globs ([...] or {...}) in one URL")) {
            try URLGlob("http://h/" + String(repeating: "{a}", count: 101))
        }
    }
}
