import Foundation
import Hummingbird
import NIOConcurrencyHelpers

/// What the sample server asks of a download before serving it: a Basic login, a cookie. The listing stays
/// open, so a browser of the server still sees what there is.
struct AccessMiddleware: RouterMiddleware {
    typealias Context = SampleRequestContext

    let login: String?
    let cookie: String?
    let log: RequestLog
    private let visits = NIOLockedValueBox(0)

    init(login: String?, cookie: String?, log: RequestLog) {
        self.login = login
        self.cookie = cookie
        self.log = log
    }

    func handle(_ request: Request, context: Context,
                next: (Request, Context) async throws -> Response) async throws -> Response {
        guard request.uri.path == "/files/download" else { return try await next(request, context) }
        if let login {
            let expected = "Basic " + Data(login.utf8).base64EncodedString()
            guard request.headers[.authorization] == expected else {
                log.write("\(request.method) download -> 401 (login)")
                var headers = HTTPFields()
                headers[.wwwAuthenticate] = #"Basic realm="SuperStorage sample""#
                return Response(status: .unauthorized, headers: headers)
            }
        }
        if let cookie {
            let sent = request.headers[values: .cookie].flatMap { $0.split(separator: ";") }
                .map { $0.trimmingCharacters(in: .whitespaces) }
            guard sent.contains(cookie) else {
                log.write("\(request.method) download -> 403 (cookie)")
                return Response(status: .forbidden)
            }
        }
        var response = try await next(request, context)
        if cookie != nil {
            let count = visits.withLockedValue { value in
                value += 1
                return value
            }
            response.headers[.setCookie] = "sample-visits=\(count); Path=/"
        }
        return response
    }
}
