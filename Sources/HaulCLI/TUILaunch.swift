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
    /// taken over (the caller falls back to line output). `jobs` (a metalink's) are added to the queue as they are.
    static func run(_ command: HaulCommand, extraURLs: [InputEntry], jobs: [DownloadJob] = []) async -> Int32? {
        var server = command.server
        var demo: (any DemoServer)?
        if command.demo {
            guard let started = await Demo.start(rate: Demo.screenRate) else { return FailureCategory.other.exitCode }
            demo = started
            server = started.baseURL
        }
        let named = command.commandLineEntries()
        let urls = named.map(\.url) + extraURLs.map(\.url)
        // The command line's downloads (a series' URLs, with -O's name for each, --mirror's sources) and an
        // input file's lines (their mirrors and options), by URL: the first of a URL wins.
        let fromCommandLine = Dictionary(named.map { ($0.url, $0) }, uniquingKeysWith: { first, _ in first })
        let fromInput = Dictionary(extraURLs.map { ($0.url, $0) }, uniquingKeysWith: { first, _ in first })
        let template = command
        // The options read once for all URLs (once a URL, they cost 1000 URLs about 8 ms of the screen's
        // start); directories made absolute, since the service's current directory is not this one. -O names
        // the one URL of the command line, not the ones added later.
        var others = template
        others.output = nil
        let maker = (named: template.jobMaker(absolute: true), others: others.jobMaker(absolute: true))
        let options = FullScreenOptions(
            urls: urls, server: server, segments: command.segments, startInFiles: server != nil && urls.isEmpty,
            makeJob: { url, segments in
                var job = if let entry = fromCommandLine[url] {
                    maker.named.job(entry)
                } else {
                    maker.others.job(fromInput[url] ?? InputEntry(url: url))
                }
                job.segments = segments
                return job
            })
        // The demo runs in this process and leaves the user's queue alone; everything else is the service's.
        let control: any DownloadControl
        var service: ServiceLink?
        if demo != nil {
            control = DownloadManager(concurrency: command.concurrency, batched: true)
        } else {
            do {
                let client = try await ServiceClient.connect(SessionCommands.directory,
                                                             starting: ServiceSettings.starting(jobs: command.concurrency))
                // A service that was running already takes a -j given here from now on, as it takes --limit-rate
                // (one started now has it already).
                if let jobs = command.jobs { await ServiceSettings.give(jobs: jobs, to: client) }
                if !jobs.isEmpty { _ = try await client.add(jobs) }
                control = RemoteControl(client: client)
                service = Self.link(client, starting: ServiceSettings.starting(jobs: command.concurrency))
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
        screen.service = service
        if demo != nil {
            // Its downloads run in this process, beside the demo's server, and end with it: a newcomer who
            // looks for them in `haul ls` afterwards is told before.
            screen.notice = "Demo: downloads run in this screen only, not in `haul ls`; files go to "
                + (command.outputDirectory ?? "haul-demo") + "/"
        }
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

    /// The attached screen's way to the service: its events with the snapshot's end marked, and a connection
    /// made again as any client makes it (starting the service with `starting` when none runs).
    static func link(_ client: ServiceClient, starting: [String]) -> ServiceLink {
        ServiceLink(
            events: { client.events() },
            connect: { () async throws(HaulError) in
                _ = try await ServiceClient.connect(client.directory, starting: starting)
            })
    }
}
