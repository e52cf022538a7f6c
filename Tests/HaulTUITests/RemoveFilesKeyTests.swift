@testable import HaulCore
import Testing
@testable import HaulTUI

/// `D`: the question names what goes, only `y` deletes, and the row says "removed with files" once done.
@Suite struct RemoveFilesKeyUnitTests {
    let size = Size(columns: 100, rows: 24)

    func paused() -> AppState {
        var state = AppState(size: size)
        _ = update(&state, .manager(.added(id: 3, url: "http://a/photo.jpg", file: "photo.jpg")))
        _ = update(&state, .manager(.started(id: 3, file: "photo.jpg", path: "/d/photo.jpg", total: 4 << 20, part: "1:2")))
        _ = update(&state, .manager(.progress(id: 3, DownloadProgress(completed: 1 << 20, batchBytes: 0, total: 4 << 20,
                                                                    bytesPerSecond: 0))))
        _ = update(&state, .manager(.state(id: 3, .paused)))
        return state
    }

    @Test func theQuestionNamesThePartAndItsStateAndOnlyYDeletes() {
        var state = paused()
        #expect(update(&state, .key(.character("D"))).isEmpty)
        #expect(state.overlay == .confirmRemoveFiles(3))
        let screen = render(state, size: state.size).lines.joined(separator: "\n")
        #expect(screen.contains("Delete the files of photo.jpg?"), "\(screen)")
        #expect(screen.contains("Delete these 2 files (1.00 MiB)?"), "\(screen)")
        #expect(screen.contains("photo.jpg.part") && screen.contains("photo.jpg.part.json"), "\(screen)")
        #expect(screen.contains("The download is cancelled first."), "\(screen)")

        #expect(update(&state, .key(.character("n"))).isEmpty)
        #expect(state.overlay == nil)
        _ = update(&state, .key(.character("D")))
        #expect(update(&state, .key(.character("y"))) == [.removeFiles(3, OwnFiles.Known(path: "/d/photo.jpg", part: "1:2"))])

        _ = update(&state, .manager(.state(id: 3, .cancelled)))
        _ = update(&state, .manager(.fact(id: 3, .filesRemoved(files: 2, bytes: 1 << 20))))
        #expect(DownloadList.stateText(state.rows[0]) == "removed with files")
        #expect(ConfirmRemoveFilesOverlay.names(state.rows[0]).isEmpty, "nothing left to name")
    }

    @Test func theFootersLineSaysWhatWentAndWhatCouldNot() {
        var outcome = OwnFiles.Outcome()
        outcome.removed = [("/d/a.bin", 1 << 20)]
        #expect(FilesRemovedLine.text(outcome) == "Deleted 1 file (1.00 MiB)")
        outcome.left = [("/d/a.bin.part.json", "is a symbolic link, not haul's file")]
        #expect(FilesRemovedLine.text(outcome) == "Deleted 1 file (1.00 MiB); left a.bin.part.json: is a symbolic link, not haul's file")
        outcome.failed = [("/d/b.bin", "Permission denied")]
        #expect(FilesRemovedLine.text(outcome) == "Cannot delete /d/b.bin: Permission denied")
    }
}
