import HaulCore
import Testing
@testable import HaulTUI

/// A download a category of the config file placed (issue 75): its row shows the category after the name,
/// short (`[video]`), and its details say which one chose the folder.
@Suite struct CategoryRowTests {
    static func placed() -> AppState {
        var row = Fixtures.row(1, "movie.mp4", .done, completed: 20 << 20)
        row.path = "/home/me/Videos/movie.mp4"
        var state = Fixtures.state(Size(columns: 160, rows: 12), rows: [row])
        _ = update(&state, .manager(.fact(id: 1, .category(name: "video", directory: "/home/me/Videos"))))
        return state
    }

    @Test func theRowShowsTheCategoryAfterTheName() {
        let state = Self.placed()
        #expect(state.rows[0].record.category == "video")
        #expect(state.rows[0].lastFact == nil, "the category is not the row's last note")
        let text = render(state, size: state.size).lines
        #expect(text.contains { $0.contains("movie.mp4 [video]") }, "\(text)")
    }

    @Test func aNarrowNameColumnKeepsTheNameAndDropsTheTag() {
        let row = Self.placed().rows[0]
        let glyphs = Glyphs.unicode
        #expect(DownloadList.nameText(row, width: 30, glyphs: glyphs) == "movie.mp4 [video]")
        #expect(DownloadList.nameText(row, width: 12, glyphs: glyphs) == "movie.mp4")
    }

    @Test func theDetailsNameTheCategory() {
        let lines = DetailsOverlay.lines(Self.placed().rows[0]).map(\.0)
        #expect(lines.contains("File   /home/me/Videos/movie.mp4"))
        #expect(lines.contains("Sorted into video (a category of the config file)"), "\(lines)")
        let plain = DetailsOverlay.lines(Fixtures.row(2, "x.bin", .queued)).map(\.0)
        #expect(!plain.contains { $0.hasPrefix("Sorted") }, "no line for a download no category placed")
    }
}
