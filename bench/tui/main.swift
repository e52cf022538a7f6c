// The screen with a long queue: how long one key takes from `update` to the frame drawn (`render`), with
// 10,000 downloads queued, against the frame interval (1/30 s). Not a test: it prints figures.
//
//     HAUL_BENCH_TESTABLE=1 swift build -c release --product tui-bench && .build/release/tui-bench
//     .build/release/tui-bench --rows 50000 --rounds 20
//
// The state is built as an attached screen builds it, from the events of a service's snapshot (an `added`
// each, the first running); each key then goes through what the app loop does with it: `update`, the
// listing made again once (`refreshListing`), and `render` of a 120x30 screen. A move key's answer, the
// service's `moved` event, is timed the same way as its own step.
import Foundation
import HaulCore
@testable import HaulTUI

struct Options {
    var rows = 10_000
    var rounds = 11

    init(_ arguments: [String]) {
        var rest = arguments.dropFirst()
        while let argument = rest.popFirst() {
            switch argument {
            case "--rows": rows = Int(rest.popFirst() ?? "") ?? rows
            case "--rounds": rounds = Int(rest.popFirst() ?? "") ?? rounds
            default:
                FileHandle.standardError.write(Data("usage: tui-bench [--rows N] [--rounds N]\n".utf8))
                exit(2)
            }
        }
    }
}

/// Names that sort differently from the ids (a name sort has work to do) and share parts (a filter keeps some).
func name(_ id: Int) -> String {
    let kinds = ["debian", "ubuntu", "fedora", "arch", "photo", "backup", "video", "notes"]
    return "\(kinds[(id * 7) % kinds.count])-\((id * 7919) % 100_000).\(["iso", "bin", "jpg", "tar.gz"][id % 4])"
}

func queue(_ count: Int) -> AppState {
    var state = AppState(size: Size(columns: 120, rows: 30))
    state.attached = true
    for id in 1...count {
        _ = update(&state, .manager(.added(id: id, url: "http://127.0.0.1:8080/\(name(id))", file: name(id))))
    }
    _ = update(&state, .manager(.state(id: 1, .connecting)))
    _ = update(&state, .manager(.started(id: 1, file: name(1), path: "/d/\(name(1))", total: 1 << 30)))
    _ = update(&state, .manager(.progress(id: 1, DownloadProgress(completed: 1 << 28, batchBytes: 0, total: 1 << 30,
                                                                   bytesPerSecond: Double(8 << 20)))))
    _ = update(&state, .manager(.state(id: 1, .downloading)))
    state.refreshListing()
    _ = render(state, size: state.size)
    return state
}

/// One step of the loop: the message through `update`, the listing made again, the frame rendered. Seconds.
func step(_ state: inout AppState, _ message: Message) -> (seconds: Double, effects: [Effect]) {
    let start = ContinuousClock.now
    let effects = update(&state, message)
    state.refreshListing()
    let grid = render(state, size: state.size)
    let elapsed = start.duration(to: .now)
    withExtendedLifetime(grid) {}
    return (Double(elapsed.components.attoseconds) / 1e18 + Double(elapsed.components.seconds), effects)
}

/// Each step's seconds, by what it was, in the order first seen.
struct Timings {
    var values: [String: [Double]] = [:]
    var order: [String] = []

    mutating func record(_ what: String, _ seconds: Double) {
        if values[what] == nil { order.append(what) }
        values[what, default: []].append(seconds)
    }
}

let options = Options(CommandLine.arguments)
var timings = Timings()

let built = ContinuousClock.now
var state = queue(options.rows)
let buildTime = built.duration(to: .now)
print("tui-bench: \(options.rows) downloads (1 running, \(options.rows - 1) queued), 120x30, \(options.rounds) rounds")
print("  snapshot of \(options.rows * 1 + 4) events applied and listed in \(buildTime)")

for _ in 0..<options.rounds {
    var round = state
    // The selection to the middle of the queue, then each move key and its answer from the service.
    round.selection = options.rows / 2
    timings.record("Down (select)", step(&round, .key(.down)).seconds)
    for (key, label) in [("K", "K (up)"), ("J", "J (down)"), ("T", "T (top)"), ("B", "B (bottom)")] {
        let pressed = step(&round, .key(.character(Character(key))))
        timings.record("\(label) key", pressed.seconds)
        guard case .move(let id, let place)? = pressed.effects.first,
              let position = round.queue.position(of: id, place) else { fatalError("no move for \(key)") }
        timings.record("\(label) moved event", step(&round, .manager(.moved(id: id, position: position))).seconds)
    }
    // Each sort in turn, back to the queue's order.
    for sort in ListSort.allCases.dropFirst() + [ListSort.queue] {
        timings.record("s -> \(sort.label)", step(&round, .key(.character("s"))).seconds)
    }
    // The filter typed, widened, cleared.
    timings.record("/ (open filter)", step(&round, .key(.character("/"))).seconds)
    for (index, c) in "deb".enumerated() {
        timings.record("filter char \(index + 1)", step(&round, .key(.character(c))).seconds)
    }
    timings.record("filter Backspace", step(&round, .key(.backspace)).seconds)
    timings.record("filter Esc (clear)", step(&round, .key(.escape)).seconds)
}

let frame = 1.0 / 30
print(String(format: "  %-26@ %10@ %10@ %10@", "key" as NSString, "median ms" as NSString, "max ms" as NSString,
             "of frame" as NSString))
var worst = 0.0
for what in timings.order {
    let values = timings.values[what, default: []].sorted()
    let median = values[values.count / 2]
    let most = values.last ?? 0
    worst = max(worst, most)
    print(String(format: "  %-26@ %10.2f %10.2f %9.0f%%", what as NSString, median * 1000, most * 1000, most / frame * 100))
}
print(String(format: "  slowest key: %.2f ms, %@ one frame (%.1f ms)", worst * 1000,
             (worst <= frame ? "within" : "MORE THAN") as NSString, frame * 1000))
