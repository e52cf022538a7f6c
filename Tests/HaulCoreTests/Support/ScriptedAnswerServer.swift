import Foundation
import Glibc
import NIOConcurrencyHelpers
import TestSupport

/// An HTTP server on 127.0.0.1 that answers every request with the same bytes, as written (a status line and
/// headers that no well-made server would send), and then closes the connection: for answers the sample
/// server cannot be made to give.
final class ScriptedAnswerServer: Sendable {
    let port: Int
    private let listener: Int32
    private let open = NIOLockedValueBox([Int32]())

    init(_ head: String, body: [UInt8]) throws {
        let answer = Array(head.utf8) + body
        let (fd, port) = try loopbackListener()
        listener = fd
        self.port = port
        Thread.detachNewThread { [self] in
            while true {
                let client = accept(fd, nil, nil)
                guard client >= 0 else { break }
                open.withLockedValue { $0.append(client) }
                Thread.detachNewThread { [self] in
                    var heads = RequestHeads(client)
                    if heads.next() != nil {
                        answer.withUnsafeBytes { buffer in
                            var sent = 0
                            while sent < buffer.count {
                                let n = write(client, buffer.baseAddress! + sent, buffer.count - sent)
                                guard n > 0 else { break }
                                sent += n
                            }
                        }
                    }
                    open.withLockedValue { $0.removeAll { $0 == client } }
                    close(client)
                }
            }
            close(fd)
        }
    }

    var url: String { "http://127.0.0.1:\(port)/data.bin" }

    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        open.withLockedValue { fds in
            for fd in fds { shutdown(fd, Int32(SHUT_RDWR)) }
        }
    }
}
