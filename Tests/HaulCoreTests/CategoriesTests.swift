import Testing
@testable import HaulCore

/// Categories (issue 75): which folder a download goes to by its final name and media type, decided in one
/// place (`CategoryRules`), and when the machine moves the claim there (the first answer, before a byte).
@Suite struct CategoriesTests {
    static let rules = CategoryRules([
        CategoryRule(name: "video", extensions: ["MP4", ".mkv"], mediaTypes: ["video/*"], directory: "/home/me/Videos"),
        CategoryRule(name: "compressed", extensions: ["gz"], directory: "/home/me/gz"),
        CategoryRule(name: "archives", extensions: ["zip", "tar.gz", "tar.xz"], mediaTypes: ["application/zip"],
                     directory: "Archives"),
        CategoryRule(name: "documents", extensions: ["pdf"], mediaTypes: ["application/pdf", "text/*"],
                     directory: "/home/me/Documents"),
        CategoryRule(name: "other-video", extensions: ["mp4"], mediaTypes: ["video/mp4"], directory: "/elsewhere"),
    ])

    @Test(arguments: [
        ("movie.mp4", nil, "video"),
        ("MOVIE.Mp4", nil, "video"),  // either case, with or without the dot in the rule
        ("clip.mkv", "application/octet-stream", "video"),
        ("backup.tar.gz", nil, "archives"),  // the longest extension first, whatever the rules' order
        ("notes.gz", nil, "compressed"),
        ("release.tar.xz", nil, "archives"),
        ("report.pdf", "video/mp4", "documents"),  // the extension before the media type
        ("download", "video/webm; codecs=vp9", "video"),  // a whole type, parameters ignored
        ("download", "Application/ZIP", "archives"),  // an exact type, either case
        ("notes", "text/plain", "documents"),
        ("page", "image/png", nil),
        ("download", nil, nil),
        (".mp4", nil, nil),  // a hidden file's name has no extension
        ("movie.mp4.part", nil, nil),
    ] as [(String, String?, String?)])
    func theFirstMatchingCategoryInTheFilesOrder(name: String, mediaType: String?, expected: String?) {
        #expect(Self.rules.category(forName: name, mediaType: mediaType)?.name == expected)
    }

    @Test func aRelativeFolderIsTakenFromTheOutputDirectory() {
        let placed = Self.rules.placement(requested: nil, name: "a.zip", mediaType: nil, base: "/home/me/Downloads")
        #expect(placed?.category == "archives")
        #expect(placed?.directory == "/home/me/Downloads/Archives")
        #expect(Self.rules.placement(requested: nil, name: "a.mp4", mediaType: nil, base: "/d")?.directory == "/home/me/Videos")
    }

    @Test func aCategoryAskedForWinsAndNoneTurnsThemOff() {
        #expect(Self.rules.placement(requested: "documents", name: "a.mp4", mediaType: nil, base: "/d")?.category
                == "documents")
        #expect(Self.rules.placement(requested: CategoryRules.none, name: "a.mp4", mediaType: nil, base: "/d") == nil)
        #expect(Self.rules.placement(requested: "gone", name: "a.mp4", mediaType: nil, base: "/d") == nil)
        #expect(CategoryRules().category(forName: "a.mp4", mediaType: "video/mp4") == nil, "off until configured")
    }

    @Test func badExtensionsAndMediaTypesAreNamed() {
        #expect(CategoryRule.problem(withExtension: ".tar.gz") == nil)
        #expect(CategoryRule.problem(withExtension: "") != nil)
        #expect(CategoryRule.problem(withExtension: "a/b") != nil)
        #expect(CategoryRule.problem(withMediaType: "video/*") == nil)
        #expect(CategoryRule.problem(withMediaType: "video") != nil)
        #expect(CategoryRule.problem(withMediaType: "*/*") != nil)
    }

    // MARK: the machine

    func machine(name: String, sorting: CategoryRules? = CategoriesTests.rules, category: String? = nil)
        -> DownloadStateMachine
    {
        DownloadStateMachine(job: DownloadJob(url: "http://h/get?id=1", outputDirectory: "/d"), name: name,
                             retryPolicy: RetryPolicy(), sorting: sorting, category: category)
    }

    func head(_ headers: [(String, String)]) -> ResponseHead {
        ResponseHead(status: 200, headers: [(name: "Content-Length", value: "100")] + headers.map { (name: $0.0, value: $0.1) },
                     effectiveURL: "http://h/get?id=1")
    }

    @Test func theServersNameMovesTheClaimIntoItsCategorysFolder() throws {
        var machine = machine(name: "get")
        _ = machine.begin(resume: nil)
        let answer = head([("Content-Disposition", "attachment; filename=\"movie.mp4\""), ("Content-Type", "text/plain")])
        #expect(try machine.headArrived(answer) == .move(to: "movie.mp4", sorting: .into(category: "video")))
        guard case .stream = try machine.claimMoved(to: "movie.mp4", category: "video", resume: nil) else {
            Issue.record("the body goes into the moved part")
            return
        }
    }

    @Test func theMediaTypeAloneMovesTheClaimUnderItsOwnName() throws {
        var machine = machine(name: "get")
        _ = machine.begin(resume: nil)
        #expect(try machine.headArrived(head([("Content-Type", "video/webm")]))
                == .move(to: "get", sorting: .into(category: "video")))
    }

    @Test func aNameGivenWithDashOKeepsItsOwnNameInTheCategorysFolder() throws {
        let job = DownloadJob(url: "http://h/get?id=1", outputDirectory: "/d", outputName: "take.2.bin")
        var machine = DownloadStateMachine(job: job, name: "take.2.bin", retryPolicy: RetryPolicy(),
                                           sorting: Self.rules)
        _ = machine.begin(resume: nil)
        #expect(try machine.headArrived(head([("Content-Type", "video/mp4"),
                                              ("Content-Disposition", "attachment; filename=\"other.mp4\"")]))
                == .move(to: "take.2.bin", sorting: .into(category: "video")))
    }

    @Test func aClaimAlreadyInItsCategorysFolderStays() throws {
        var machine = machine(name: "movie.mp4", category: "video")
        _ = machine.begin(resume: nil)
        guard case .stream = try machine.headArrived(head([("Content-Type", "video/mp4")])) else {
            Issue.record("no move")
            return
        }
    }

    @Test func withoutCategoriesNothingMoves() throws {
        var machine = machine(name: "movie.mp4", sorting: nil)
        _ = machine.begin(resume: nil)
        guard case .stream = try machine.headArrived(head([("Content-Type", "video/mp4")])) else {
            Issue.record("no move")
            return
        }
    }
}
