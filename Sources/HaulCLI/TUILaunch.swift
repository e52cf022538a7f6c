import CLinux
import FoundationEssentials
import Glibc
import HaulCore
import HaulServiceClient
import HaulTUI

/// Starts the full-screen interface for a command line: `haul` on a terminal without `--plain`/`--json`.
enum TUILaunch {
    /// Whether this command line gets the full screen.
    static func wanted(_ command: HaulCommand) -> Bool {
        !command.plain && !command.json && FullScreen.isAvailable
    }

    /// Runs the TUI until the user quits and returns the exit code; nil when the terminal could not be
    /// taken over (the caller falls back to line output).
    static func run(_ command: HaulCommand, extraURLs: [InputEntry]) async -> Int32? {
        var server = command.server
        var demo: (any DemoServer)?
        if command.demo {
            guard let started = await Demo.start(rate: Demo.screenRate) else { return FailureCategory.other.exitCode }
            demo = started
            server = started.baseURL
        }
        let urls = command.urls + extraURLs.map(\.url)
        // The options of an input file's lines, by URL (the first line of a URL wins).
        let inputOptions = Dictionary(extraURLs.map { ($0.url, $0.options) }, uniquingKeysWith: { first, _ in first })
        let template = command
        // The service's current directory is not this one: directories are made absolute.
        @Sendable func jobs(_ urls: [String]) -> [String: DownloadJob] {
            var single = template
            single.urls = []
            // -O names the one URL of the command line, not the ones added later.
            if template.urls.count != 1 || urls != template.urls { single.output = nil }
            let built = single.downloads(extra: urls.map { InputEntry(url: $0, options: inputOptions[$0] ?? InputOptions()) },
                                         absolute: true)
            return Dictionary(zip(urls, built), uniquingKeysWith: { first, _ in first })
        }
        // The jobs of the URLs given at the start, built in one pass (the options read once, not once a URL:
        // 1000 URLs cost the screen's start about 8 ms one by one); a URL added later is built when it comes.
        let named = template.urls.count == 1 ? template.urls : []
        let prepared = jobs(urls.filter { !named.contains($0) }).merging(jobs(named)) { _, own in own }
        let options = FullScreenOptions(
            urls: urls, server: server, segments: command.segments, startInFiles: server != nil && urls.isEmpty,
            makeJob: { url, segments in
                var job = prepared[url] ?? jobs([url])[url]!
                job.segments = segments
                return job
            })
        // The demo runs in this process and leaves the user's queue alone; everything else is the service's.
        let control: any DownloadControl
        if demo != nil {
            control = DownloadManager(concurrency: command.concurrency, batched: true)
        } else {
            do {
                let client = try await ServiceClient.connect(SessionCommands.directory,
                                                             starting: ServiceSettings.starting(jobs: command.concurrency))
                // A service that was running already takes a -j given here from now on, as it takes --limit-rate.
                if let jobs = command.jobs { await ServiceSettings.give(jobs: jobs, to: client) }
                control = RemoteControl(client: client)
            } catch {
                TextOutput.standard.err("haul: \(error.message)")
                return FailureCategory.other.exitCode
            }
        }
        // --limit-rate caps what this screen's downloads share: the service's when attached.
        if let rate = command.overallRate { await control.setOverallLimit(rate) }
        var screen = options
        screen.notify = !command.noNotify
        screen.transfer = command.transferOptions
        screen.pictures = command.pictures ?? PictureMode.detect(environment: ProcessInfo.processInfo.environment)
        let code: Int32?
        do {
            code = try await FullScreen.run(screen, manager: control)
        } catch {
            TextOutput.standard.err("haul: \(error); using line output")
            code = nil
        }
        await demo?.stop()
        return code
    }
}
