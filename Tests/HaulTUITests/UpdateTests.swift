@testable import HaulCore
import Testing
@testable import HaulTUI

/// `update` as a function: keys and events in, state and effects out.
@Suite struct UpdateTests {
    let size = Size(columns: 100, rows: 20)

    func send(_ state: inout AppState, _ keys: Key...) -> [Effect] {
        keys.flatMap { update(&state, .key($0)) }
    }

    func event(_ state: inout AppState, _ event: ManagerEvent) -> [Effect] {
        update(&state, .manager(event))
    }

    @Test func startRequestsTheURLsAndTheFilesListing() {
        var state = AppState(size: size)
        state.files.server = "http://127.0.0.1:9"
        state.defaultSegments = 2
        let effects = update(&state, .started(urls: ["http://a/1", "http://a/2"]))
        // One request for them all.
        #expect(effects == [.download(urls: ["http://a/1", "http://a/2"], segments: 2), .loadFiles])
        #expect(state.files.listing == .loading)
    }

    /// CI: a screen attaching while its URL was added got the download in the snapshot and live, and showed
    /// a second row that stayed "queued" (quitRestoresTheTerminalAndLeavesTheDownloadResumable timed out).
    @Test func aDownloadAddedTwiceIsOneRow() {
        var state = AppState(size: size)
        _ = event(&state, .added(id: 7, url: "http://a/m.bin", file: "m.bin"))
        _ = event(&state, .state(id: 7, .downloading))
        _ = event(&state, .added(id: 7, url: "http://a/m.bin", file: "m.bin"))
        #expect(state.rows.count == 1)
        #expect(state.rows[0].state == .downloading)
    }

    /// An `added` out of the ids' order (a live one before the snapshot's older ones) takes its place among
    /// the rows, so that every row is found by bisection; its events reach it, the others' stay theirs.
    @Test func aDownloadAddedOutOfOrderTakesItsPlace() {
        var state = AppState(size: size)
        for id in [1, 2, 4] { _ = event(&state, .added(id: id, url: "http://a/\(id)", file: "f\(id)")) }
        state.refreshListing()
        state.selection = 2
        _ = event(&state, .added(id: 3, url: "http://a/3", file: "f3"))
        _ = event(&state, .state(id: 3, .downloading))
        _ = event(&state, .state(id: 4, .paused))
        state.refreshListing()
        #expect(state.rows.map(\.id) == [1, 2, 3, 4])
        #expect(state.rows.map(\.state) == [.queued, .queued, .downloading, .paused])
        #expect(state.selectedRow?.id == 4)
        #expect([1, 2, 3, 4, 5].map { state.index(of: $0) } == [0, 1, 2, 3, nil])
    }

    /// The loop tells whether a manager event changed the state by its own row, the row count and the rest
    /// (`StateChange`), not by a copy of every row: that holds as long as no manager event changes another
    /// download's row. Every kind of event, for every row and an unknown id, over screens with no overlay,
    /// a download's details, a live picture and `q`'s question: the watch agrees with the whole comparison.
    @Test func aManagerEventChangesOnlyItsOwnRow() {
        let result = DownloadResult(file: "x.bin", path: "/d/x.bin", bytes: 5, skipped: false)
        let progress = DownloadProgress(completed: 7, batchBytes: 7, total: 100, bytesPerSecond: 1)
        let reason = HaulError(.network, "reset")
        func events(_ id: DownloadID) -> [ManagerEvent] {
            [.added(id: id, url: "http://a/\(id)", file: "f\(id)"), .state(id: id, .downloading),
             .state(id: id, .done), .state(id: id, .failed(reason)), .state(id: id, .cancelled),
             .state(id: id, .paused), .state(id: id, .queued), .started(id: id, file: "g", path: "/d/g", total: 9),
             .progress(id: id, progress), .fact(id: id, .limited(bytesPerSecond: 1024)),
             .fact(id: id, .retrying(attempt: 1, of: 5, delaySeconds: 1, resumeAt: 3, reason: reason)),
             .fact(id: id, .previewSaved(path: "/d/p.jpg")), .finished(id: id, result, seconds: 2),
             .removed(id: id)]
        }
        var screens: [AppState] = [Fixtures.mixed(size)]
        for overlay: AppState.Overlay in [.details(1), .details(9), .confirmDetach, .confirmQuit] {
            var screen = Fixtures.mixed(size)
            screen.overlay = overlay
            screens.append(screen)
        }
        var live = Fixtures.mixed(size)
        live.overlay = .picture(path: "/d/photo-large.partial.jpg")
        live.livePicture = 8
        screens.append(live)
        for screen in screens {
            for id in screen.rows.map(\.id) + [99] {
                for event in events(id) {
                    var state = screen
                    let watch = StateChange(state, .manager(event))
                    _ = update(&state, .manager(event))
                    #expect(watch.changed(state) == (state != screen),
                            "\(event) over \(String(describing: screen.overlay))")
                    if case .added = event { continue }
                    if case .removed = event { continue }
                    #expect(state.rows.filter { $0.id != id } == screen.rows.filter { $0.id != id }, "\(event)")
                }
            }
        }
    }

    /// A retry says what the part keeps: an attempt that failed before its first progress event showed
    /// 0 B while its part held the bytes. Never less than shown (segments keep more than the prefix).
    @Test func aRetryShowsWhatThePartKeeps() {
        var state = AppState(size: size)
        _ = event(&state, .added(id: 1, url: "http://a/x.bin", file: "x.bin"))
        let reason = HaulError(.network, "reset")
        _ = event(&state, .fact(id: 1, .retrying(attempt: 1, of: 5, delaySeconds: 1, resumeAt: 4096, reason: reason)))
        #expect(state.rows[0].completed == 4096)
        _ = event(&state, .progress(id: 1, DownloadProgress(completed: 9000, batchBytes: 10, total: 20000,
                                                            bytesPerSecond: 1)))
        _ = event(&state, .fact(id: 1, .retrying(attempt: 2, of: 5, delaySeconds: 1, resumeAt: 8192, reason: reason)))
        #expect(state.rows[0].completed == 9000)
    }

    @Test func withoutAServerNothingIsLoaded() {
        var state = AppState(size: size)
        #expect(update(&state, .started(urls: [])) == [])
        #expect(state.files.listing == .notConfigured)
    }

    @Test func selectionStaysWithinTheRows() {
        var state = Fixtures.mixed(size)
        _ = send(&state, .up, .character("k"))
        #expect(state.selection == 0)
        _ = send(&state, .down, .character("j"), .down)
        #expect(state.selection == 3)
        _ = send(&state, .end)
        #expect(state.selection == state.rows.count - 1)
        _ = send(&state, .down, .pageDown)
        #expect(state.selection == state.rows.count - 1)
        _ = send(&state, .pageUp, .pageUp, .pageUp)
        #expect(state.selection == 0)
        var empty = AppState(size: size)
        _ = send(&empty, .down, .end, .up)
        #expect(empty.selection == 0)
    }

    @Test func removingTheLastRowMovesTheSelectionUp() {
        var state = Fixtures.mixed(size)
        state.selection = state.rows.count - 1
        let last = state.rows[state.rows.count - 1].id
        _ = event(&state, .removed(id: last))
        #expect(state.selection == state.rows.count - 1)
        state.selection = 2
        _ = event(&state, .removed(id: state.rows[0].id))
        #expect(state.selection == 1)
        #expect(state.selectedRow?.name == "huge.bin")
    }

    @Test func cancelsTheSelectedDownloadAndSaysSoUntilConfirmed() {
        var state = Fixtures.mixed(size)
        #expect(send(&state, .character("c")) == [.cancel(1)])
        #expect(state.rows[0].pendingStop == .cancelled)
        #expect(DownloadList.stateText(state.rows[0]) == "cancelling")
        #expect(send(&state, .character("c")) == [], "a second c does not cancel twice")
        _ = event(&state, .state(id: 1, .cancelled))
        #expect(state.rows[0].pendingStop == nil)
        #expect(DownloadList.stateText(state.rows[0]) == "cancelled")
    }

    @Test func finishedRowsCannotBeCancelled() {
        var state = Fixtures.mixed(size)
        state.selection = 4  // done.iso
        #expect(send(&state, .character("c")) == [])
    }

    @Test func cancelAllCancelsEveryDownloadAndStopsTheClockAtOnce() {
        var state = Fixtures.mixed(size)
        let effects = send(&state, .character("C"))
        #expect(effects == [.stopClock, .cancelAll])
        #expect(!state.clockRunning)
        for row in state.rows where !row.state.isFinished {
            #expect(row.pendingStop == .cancelled, "\(row.name)")
        }
        // An event already on its way does not start the clock again.
        #expect(event(&state, .state(id: 1, .downloading)) == [])
        #expect(!state.clockRunning)
        #expect(update(&state, .tick) == [])
        #expect(state.elapsedSeconds == 42)
    }

    @Test func cancelAllWorksInTheFilesViewToo() {
        var state = Fixtures.files(size)
        #expect(send(&state, .character("C")) == [.stopClock, .cancelAll])
    }

    /// A download from which nothing has come for two ticks of the clock shows 0 B/s, not the last rate
    /// measured (a stall, or a rate cap's silence after libcurl's burst, showed 12 MiB/s for half a minute).
    @Test func aQuietDownloadsSpeedFallsToZero() {
        var state = AppState(size: size)
        _ = event(&state, .added(id: 1, url: "http://a/x", file: "x"))
        _ = event(&state, .state(id: 1, .downloading))
        let progress = DownloadProgress(completed: 1000, batchBytes: 1000, total: 10_000, bytesPerSecond: 5000)
        _ = event(&state, .progress(id: 1, progress))
        _ = update(&state, .tick)
        #expect(state.rows[0].bytesPerSecond == 5000, "one quiet second is not yet a stall")
        _ = update(&state, .tick)
        #expect(state.rows[0].bytesPerSecond == 0)
        #expect(state.rows[0].secondsLeft == nil)
        _ = event(&state, .progress(id: 1, progress))
        #expect(state.rows[0].bytesPerSecond == 5000)
    }

    @Test func theClockStartsWithTheFirstActiveDownloadAndStopsWithTheLast() {
        var state = AppState(size: size)
        #expect(event(&state, .added(id: 1, url: "http://a/x", file: "x")) == [.startClock])
        #expect(state.clockRunning)
        #expect(event(&state, .added(id: 2, url: "http://a/y", file: "y")) == [])
        #expect(event(&state, .state(id: 1, .connecting)) == [])
        #expect(update(&state, .tick) == [])
        #expect(update(&state, .tick) == [])
        #expect(state.elapsedSeconds == 2)
        #expect(event(&state, .state(id: 1, .done)) == [])
        #expect(event(&state, .state(id: 2, .failed(HaulError(.network, "reset")))) == [.stopClock])
        #expect(!state.clockRunning)
        _ = update(&state, .tick)
        #expect(state.elapsedSeconds == 2, "a tick after the stop is ignored")
        // A retry starts it again, from where it was.
        #expect(event(&state, .state(id: 2, .queued)) == [.startClock])
    }

    @Test func pauseAndResume() {
        var state = Fixtures.mixed(size)
        #expect(send(&state, .character("p")) == [.pause(1)])
        #expect(state.rows[0].pendingStop == .paused)
        _ = event(&state, .state(id: 1, .paused))
        #expect(send(&state, .character(" ")) == [.resume(1)])
        state.selection = 4  // done
        #expect(send(&state, .character("p")) == [])
    }

    @Test func pauseAllThenResumeAll() {
        var state = Fixtures.mixed(size)
        #expect(send(&state, .character("P")) == [.pauseAll, .stopClock])
        for id in [1, 2, 3, 9] { _ = event(&state, .state(id: id, .paused)) }
        #expect(send(&state, .character("P")) == [.resumeAll])
    }

    @Test func retryOnlyFailedOrCancelled() {
        var state = Fixtures.mixed(size)
        state.selection = 5  // failed
        #expect(send(&state, .character("r")) == [.retry(6)])
        state.selection = 6  // cancelled
        #expect(send(&state, .character("r")) == [.retry(7)])
        state.selection = 0  // downloading
        #expect(send(&state, .character("r")) == [])
        #expect(state.message != nil)
    }

    @Test func removeOnlyFinishedRows() {
        var state = Fixtures.mixed(size)
        state.selection = 4
        #expect(send(&state, .character("d")) == [.remove(5)])
        state.selection = 5
        #expect(send(&state, .delete) == [.remove(6)])
        state.selection = 0
        #expect(send(&state, .character("d")) == [])
        #expect(state.message?.contains("finished") == true)
        _ = send(&state, .down)
        #expect(state.message == nil, "the next key clears the message")
    }

    @Test func addPromptsForAURL() {
        var state = Fixtures.mixed(size)
        _ = send(&state, .character("a"))
        #expect(state.overlay == .prompt(""))
        _ = send(&state, .character("h"), .character("x"), .backspace, .character("t"))
        #expect(state.overlay == .prompt("ht"))
        for c in "tp://h/f" { _ = send(&state, .character(c)) }
        #expect(send(&state, .enter) == [.download(urls: ["http://h/f"], segments: 1)])
        #expect(state.overlay == nil)
        _ = send(&state, .character("a"), .character("x"), .escape)
        #expect(state.overlay == nil)
        _ = send(&state, .character("a"), .character(" "))
        #expect(send(&state, .enter) == [], "a blank URL adds nothing")
    }

    /// `u`: a prompt for the selected stopped download's new address; Enter hands it over, Esc drops it, and a
    /// running download is told to pause first.
    @Test func uAsksAStoppedDownloadForANewAddress() {
        var state = Fixtures.mixed(size)
        state.selection = 5  // failed
        #expect(send(&state, .character("u")) == [])
        #expect(state.overlay == .refreshPrompt(6, ""))
        for c in "http://new/f x" { _ = send(&state, .character(c)) }
        _ = send(&state, .backspace, .backspace)
        #expect(send(&state, .enter) == [.refresh(6, url: "http://new/f")])
        #expect(state.overlay == nil)
        _ = send(&state, .character("u"), .character("x"), .escape)
        #expect(state.overlay == nil)
        state.selection = 0  // downloading
        #expect(send(&state, .character("u")) == [])
        #expect(state.overlay == nil)
        #expect(state.message == "Only a paused or failed download takes a new address (pause it first)")
    }

    @Test func attachedQDetachesKeepingTheDownloadsGoingUnlessPAsksToPause() {
        var state = Fixtures.mixed(size)
        state.attached = true
        #expect(send(&state, .character("q")) == [])
        #expect(state.overlay == .confirmDetach)
        #expect(send(&state, .escape) == [] && state.overlay == nil && !state.quitting)
        _ = send(&state, .character("q"))
        #expect(send(&state, .enter) == [.quit(pausing: false), .stopClock], "Enter: keep going, the default")
        #expect(state.quitting && state.rows.allSatisfy { $0.pendingStop != .paused || $0.id == 9 })

        var pausing = Fixtures.mixed(size)
        pausing.attached = true
        _ = send(&pausing, .character("q"))
        #expect(send(&pausing, .character("p")) == [.quit(pausing: true), .stopClock])
        #expect(pausing.rows[0].pendingStop == .paused)

        var interrupted = Fixtures.mixed(size)
        interrupted.attached = true
        #expect(update(&interrupted, .interrupt) == [.quit(pausing: false), .stopClock],
                "a signal detaches: the downloads are the service's")
        #expect(Footer.hints(pausing, glyphs: .unicode).isEmpty == false)
    }

    @Test func quitAsksWhileDownloadsRunAndThenPausesThem() {
        var state = Fixtures.mixed(size)
        #expect(send(&state, .character("q")) == [])
        #expect(state.overlay == .confirmQuit)
        #expect(send(&state, .character("n")) == [])
        #expect(state.overlay == nil)
        #expect(!state.quitting)
        _ = send(&state, .character("q"))
        #expect(send(&state, .character("y")) == [.quit(pausing: true), .stopClock])
        #expect(state.quitting)
        #expect(state.rows[0].pendingStop == .paused)
        #expect(send(&state, .character("q")) == [], "keys are ignored while quitting")
    }

    /// `q` while the last download was finishing: once it is done, the question about it is moot and the
    /// screen leaves (it used to stay, asking about "1 download" that had ended, until a second key).
    @Test(arguments: [true, false])
    func aQuitQuestionWhoseDownloadsAllEndLeavesAsAsked(attached: Bool) {
        var state = Fixtures.state(size, rows: [Fixtures.row(1, "a", .done), Fixtures.row(2, "b", .downloading)])
        state.attached = attached
        _ = send(&state, .character("q"))
        #expect(state.overlay == (attached ? .confirmDetach : .confirmQuit))
        let effects = update(&state, .manager(.state(id: 2, .done)))
        #expect(effects.contains(.quit(pausing: false)))
        #expect(state.quitting && state.overlay == nil)

        var stillRunning = Fixtures.state(size, rows: [Fixtures.row(1, "a", .downloading), Fixtures.row(2, "b", .downloading)])
        stillRunning.attached = attached
        _ = send(&stillRunning, .character("q"))
        #expect(!update(&stillRunning, .manager(.state(id: 2, .done))).contains(.quit(pausing: false)))
        #expect(!stillRunning.quitting, "one still runs: the question stands")
    }

    @Test func quitWithNothingRunningLeavesAtOnce() {
        var state = Fixtures.state(size, rows: [Fixtures.row(1, "a", .done)])
        #expect(send(&state, .character("q")) == [.quit(pausing: false)])
    }

    @Test func interruptQuitsPausing() {
        var state = Fixtures.mixed(size)
        state.overlay = .prompt("abc")
        #expect(update(&state, .interrupt) == [.quit(pausing: true), .stopClock])
        #expect(state.overlay == nil)
        #expect(update(&state, .interrupt) == [])
    }

    @Test func helpOpensAndCloses() {
        var state = Fixtures.mixed(size)
        _ = send(&state, .character("?"))
        #expect(state.overlay == .help)
        #expect(send(&state, .character("c")) == [], "keys do not act through the help")
        #expect(state.overlay == nil)
        _ = send(&state, .character("?"), .escape)
        #expect(state.overlay == nil)
    }

    @Test func tabSwitchesViews() {
        var state = Fixtures.mixed(size)
        _ = send(&state, .tab)
        #expect(state.view == .files)
        _ = send(&state, .tab)
        #expect(state.view == .downloads)
    }

    @Test func enterShowsDetailsInDownloadsAndDownloadsInFiles() {
        var state = Fixtures.mixed(size)
        #expect(send(&state, .enter) == [])
        #expect(state.overlay == .details(1))
        _ = send(&state, .escape)
        var files = Fixtures.files(size)
        files.multiPartSegments = 6
        #expect(send(&files, .enter) == [.download(urls: ["http://127.0.0.1:8080/files/download?medium.bin"], segments: 1)])
        #expect(send(&files, .character("m")) == [.download(urls: ["http://127.0.0.1:8080/files/download?medium.bin"], segments: 6)])
        _ = send(&files, .up)
        #expect(files.files.selection == 1)
        #expect(send(&files, .character("r")) == [.loadFiles])
    }

    @Test func fileNamesArePercentEncoded() {
        #expect(FilesAddress.download(server: "http://h:1/", name: "a b&c/ä.jpg")
            == "http://h:1/files/download?a%20b%26c%2F%C3%A4.jpg")
    }

    @Test func pictureKeyAsksForTheJPEG() {
        var state = Fixtures.state(size, rows: [Fixtures.row(1, "photo.jpg", .done), Fixtures.row(2, "x.bin", .done)])
        #expect(send(&state, .character("v")) == [.showPicture(path: "downloads/photo.jpg")])
        #expect(state.overlay == .picture(path: "downloads/photo.jpg"))
        _ = send(&state, .escape, .down)
        #expect(send(&state, .character("v")) == [])
        var cancelled = Fixtures.state(size, rows: [Fixtures.row(1, "photo.jpg", .cancelled)])
        _ = update(&cancelled, .manager(.fact(id: 1, .previewSaved(path: "downloads/photo.partial.jpg"))))
        #expect(send(&cancelled, .character("v")) == [.showPicture(path: "downloads/photo.partial.jpg")])
    }

    @Test func managerEventsFillTheRow() {
        var state = AppState(size: size)
        _ = event(&state, .added(id: 7, url: "http://h/f?x", file: "x"))
        _ = event(&state, .state(id: 7, .connecting))
        _ = event(&state, .started(id: 7, file: "real.bin", path: "/d/real.bin", total: 1000))
        _ = event(&state, .state(id: 7, .downloading))
        _ = event(&state, .progress(id: 7, DownloadProgress(completed: 250, batchBytes: 250, total: 1000, bytesPerSecond: 50)))
        let row = state.rows[0]
        #expect(row.name == "real.bin")
        #expect(row.fraction == 0.25)
        #expect(row.secondsLeft == 15)
        #expect(state.totalSpeed == 50)
        _ = event(&state, .finished(id: 7, DownloadResult(file: "real.bin", path: "/d/real.bin", bytes: 1000, skipped: false), seconds: 2))
        _ = event(&state, .state(id: 7, .done))
        #expect(state.rows[0].completed == 1000)
        #expect(state.rows[0].bytesPerSecond == 0)
        #expect(state.doneCount == 1)
        #expect(!state.clockRunning)
    }

    @Test func filesListingArrives() {
        var state = AppState(size: size)
        state.files.server = "http://h"
        _ = update(&state, .started(urls: []))
        _ = update(&state, .filesLoaded(.success([RemoteFile(name: "a", size: 1, date: "d")])))
        #expect(state.files.entries.count == 1)
        _ = update(&state, .filesLoaded(.failure(FilesError(message: "refused"))))
        #expect(state.files.listing == .failed("refused"))
        _ = update(&state, .statusLoaded("ok"))
        #expect(state.files.status == "ok")
    }

    @Test func resizeChangesTheSize() {
        var state = AppState(size: size)
        #expect(update(&state, .resize(Size(columns: 20, rows: 5))) == [])
        #expect(state.size == Size(columns: 20, rows: 5))
    }
}

extension UpdateTests {
    @Test func aRetryShowsInTheStateUntilBytesFlowAgain() {
        var state = Fixtures.state(size, rows: [Fixtures.row(1, "x.bin", .connecting)])
        _ = update(&state, .manager(.fact(id: 1, .retrying(attempt: 2, of: 5, delaySeconds: 1, resumeAt: 0,
                                                         reason: HaulError(.network, "connection reset by peer")))))
        #expect(DownloadList.stateText(state.rows[0]) == "retry 2 of 5: connection reset by peer")
        _ = update(&state, .manager(.progress(id: 1, DownloadProgress(completed: 1, batchBytes: 1, total: 2, bytesPerSecond: 1))))
        #expect(DownloadList.stateText(state.rows[0]) == "connecting")
        _ = update(&state, .manager(.fact(id: 1, .retrying(attempt: 5, of: 5, delaySeconds: 4, resumeAt: 0,
                                                         reason: HaulError(.network, "timed out")))))
        _ = update(&state, .manager(.state(id: 1, .failed(HaulError(.network, "timed out")))))
        #expect(DownloadList.stateText(state.rows[0]) == "failed: timed out")
    }
}
