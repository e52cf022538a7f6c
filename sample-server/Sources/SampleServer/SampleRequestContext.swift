import Hummingbird
import NIOCore

/// The request context of the sample server: Hummingbird's basics plus the connection, which a dropped response
/// must close itself.
struct SampleRequestContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    let channel: any Channel

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        channel = source.channel
    }
}
