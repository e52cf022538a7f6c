/// Where the server reports download requests and injected faults; silent unless configured.
struct RequestLog: Sendable {
    let sink: (@Sendable (String) -> Void)?

    func write(_ line: @autoclosure () -> String) {
        sink?(line())
    }
}
