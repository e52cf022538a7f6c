import HaulCore

extension AppLoop {
    /// Carries out what `update` asks for, for one run of the loop, and owns every handle that takes: the
    /// elapsed clock's task, the task that follows the service (or waits to connect to it again), the wait
    /// for the downloads to pause when quitting, and the frames. Work that ends by itself (loading files, a
    /// picture, the overall cap) runs as a child task of the loop's group, which the loop cancels and awaits
    /// when it leaves. Used by the loop's task only; what it hands to other tasks are its constants.
    final class EffectRunner {
        private let loop: AppLoop
        private let sink: AsyncStream<Input>.Continuation
        private let ticker: ClockTicker<C>
        let frames: FrameScheduler
        /// The service's events, or the wait to connect to it again and the attempt. Unstructured, as
        /// `waitForIdle`: a start of the service under way cannot be cancelled, and `q` must not wait for it.
        private var link: Task<Void, Never>?
        private var waitForIdle: Task<Void, Never>?

        init(_ loop: AppLoop, sink: AsyncStream<Input>.Continuation, observe: (@Sendable (AppState) -> Void)?) {
            self.loop = loop
            self.sink = sink
            ticker = ClockTicker(clock: loop.clock) { sink.yield(.message(.tick)) }
            frames = FrameScheduler(screen: loop.screen, clock: loop.clock, interval: loop.frameInterval, sink: sink,
                                    observe: observe)
        }

        /// Feeds the manager's events to the loop: the service's, or those of the downloads in this process.
        func followEvents(in group: inout TaskGroup<Void>) {
            let sink = self.sink
            if let service = loop.service {
                let clock = loop.clock
                link = Task { await AppLoop.follow(service, clock: clock, sink: sink) }
            } else {
                let manager = loop.manager
                group.addTask {
                    for await events in manager.eventBatches() { sink.yield(.managerEvents(events)) }
                }
            }
        }

        /// Stops what runs on its own when the loop leaves: the clock, the frame due, the link, the wait.
        func finish() {
            ticker.stop()
            frames.cancel()
            waitForIdle?.cancel()
            link?.cancel()
        }

        /// Carries out `effect`, which `update` returned with `state`.
        func perform(_ effect: Effect, _ state: AppState, in group: inout TaskGroup<Void>) async {
            let manager = loop.manager
            switch effect {
            case .download(let urls, let segments): await manager.submit(urls.map { loop.makeJob($0, segments) })
            case .cancel(let id): await manager.cancel(id)
            case .cancelAll: await manager.cancelAll()
            case .pause(let id): await manager.pause(id)
            case .resume(let id): await manager.resume(id)
            case .pauseAll: await manager.pauseAll()
            case .resumeAll: await manager.resumeAll()
            case .retry(let id): await manager.retry(id)
            case .remove(let id): await manager.remove(id)
            case .removeFiles(let id, let known):
                let sink = self.sink
                group.addTask {
                    let outcome = await manager.removeFiles(id, known)
                    sink.yield(.message(.notice(FilesRemovedLine.text(outcome))))
                }
            case .move(let id, let place): await manager.move(id, place)
            case .refresh(let id, let url):
                // The check asks the new address for a block: the loop goes on meanwhile.
                let sink = self.sink
                group.addTask {
                    let line = switch await manager.refresh(id, to: url) {
                    case .success(let kept) where kept > 0:
                        "Download \(id) continues from \(ByteFormat.size(kept)) at its new address"
                    case .success: "Download \(id) starts again from its new address"
                    case .failure(let error): error.message
                    }
                    sink.yield(.message(.notice(line)))
                }
            case .setOverallLimit(let limit): await manager.setOverallLimit(limit)
            case .setLimit(let id, let limit): await manager.setLimit(id, limit)
            case .open(let path):
                if let problem = Opener.open(path) { sink.yield(.message(.notice(problem))) }
            case .notify(let text): loop.screen.notify(text)
            case .reconnect(let delay): reconnect(after: delay)
            case .loadLimit: loadLimit(in: &group)
            case .startClock: ticker.start()
            case .stopClock: ticker.stop()
            case .loadFiles:
                guard let server = state.files.server else { return }
                loadFiles(from: server, in: &group)
            case .showPicture(let path): showPicture(path, state, in: &group)
            case .describePicture(let id, let path):
                let sink = self.sink
                group.addTask {
                    sink.yield(.message(.pictureDescribed(id, PictureView.describe(path: path))))
                }
            case .quit(let pausing): await quit(pausing: pausing, state, in: &group)
            }
        }

        /// Asks the manager for the overall cap in force.
        func loadLimit(in group: inout TaskGroup<Void>) {
            let manager = loop.manager
            let sink = self.sink
            group.addTask {
                sink.yield(.message(.limitLoaded(await manager.overallLimit)))
                sink.yield(.message(.scheduleLoaded(await manager.schedule)))
            }
        }

        /// After `delay` on the loop's clock, connects to the service again (in place of any link before), and
        /// follows its events once connected.
        private func reconnect(after delay: Duration) {
            guard let service = loop.service else { return }
            let clock = loop.clock
            let sink = self.sink
            link?.cancel()
            link = Task {
                guard (try? await clock.sleep(for: delay)) != nil else { return }
                do throws(HaulError) {
                    try await service.connect()
                } catch {
                    if !Task.isCancelled { sink.yield(.message(.service(.failed(error.message)))) }
                    return
                }
                guard !Task.isCancelled else { return }
                sink.yield(.message(.service(.connected)))
                await AppLoop.follow(service, clock: clock, sink: sink)
            }
        }

        private func loadFiles(from server: String, in group: inout TaskGroup<Void>) {
            let files = loop.files
            let sink = self.sink
            group.addTask {
                async let status = files.status(server: server)
                sink.yield(.message(.filesLoaded(await files.list(server: server))))
                if let line = await status { sink.yield(.message(.statusLoaded(line))) }
            }
        }

        private func showPicture(_ path: String, _ state: AppState, in group: inout TaskGroup<Void>) {
            // Decoding a large photo takes a moment: off the loop, as a child task.
            let area = PictureOverlay.area(in: state.size)
            let capability = state.pictureColors
            var fitted = state.pictureDrawing
            // The font may have changed since (a zoom is a resize too).
            if fitted.mode != nil, let cell = CellPixels.of(terminal: 1) { fitted.cell = cell }
            let drawing = fitted
            let sink = self.sink
            group.addTask {
                let cells = PictureView.render(path: path, width: area.width, height: area.height,
                                               capability: capability, drawing: drawing)
                sink.yield(.message(.pictureLoaded(path: path, cells)))
            }
        }

        /// Stops the clock, shows the state that says so, pauses what runs when asked, and has the loop told
        /// when the downloads are idle or `quitTimeout` has passed, whichever comes first.
        private func quit(pausing: Bool, _ state: AppState, in group: inout TaskGroup<Void>) async {
            let manager = loop.manager
            let clock = loop.clock
            let timeout = loop.quitTimeout
            let sink = self.sink
            ticker.stop()
            frames.draw(state)
            if pausing { await manager.pauseAll() }
            // Unstructured: waitUntilIdle cannot be cancelled, and quitting must not hang on it.
            waitForIdle = Task {
                await manager.waitUntilIdle()
                sink.yield(.readyToQuit)
            }
            group.addTask {
                try? await clock.sleep(for: timeout)
                sink.yield(.readyToQuit)
            }
        }
    }

    /// Hands frames to the screen: a change the user made at once, any other at most once per `interval` on
    /// the loop's clock, through one delayed frame scheduled for when the next is due (`FramePacer`).
    final class FrameScheduler {
        private let screen: any Screen
        private let clock: C
        private let sink: AsyncStream<Input>.Continuation
        private let observe: (@Sendable (AppState) -> Void)?
        private var pacer: FramePacer<C.Instant>
        /// The frame scheduled for when it is due; nil when none waits.
        private var delayedFrame: Task<Void, Never>?

        init(screen: any Screen, clock: C, interval: Duration, sink: AsyncStream<Input>.Continuation,
             observe: (@Sendable (AppState) -> Void)?) {
            self.screen = screen
            self.clock = clock
            self.sink = sink
            self.observe = observe
            pacer = FramePacer(interval: interval)
        }

        func draw(_ state: AppState) {
            screen.show(render(state, size: state.size))
            pacer.drew(at: clock.now)
            observe?(state)
        }

        /// A change to show: at once for what the user did, else within the frame cap.
        func show(_ state: AppState, userInput: Bool) {
            let now = clock.now
            if userInput || pacer.canDraw(at: now) {
                // What the user did shows at once; the cap is for the flow of progress events.
                cancel()
                draw(state)
            } else if delayedFrame == nil {
                let due = pacer.nextFrame(after: now)
                let clock = self.clock
                let sink = self.sink
                delayedFrame = Task {
                    // Cancelled: a frame was drawn meanwhile, and this one is not due any more.
                    guard (try? await clock.sleep(until: due, tolerance: nil)) != nil else { return }
                    sink.yield(.frame)
                }
            }
        }

        /// The delayed frame is due: draws `state` as it is now.
        func frameDue(_ state: AppState) {
            delayedFrame = nil
            draw(state)
        }

        /// Drops the delayed frame, if one waits.
        func cancel() {
            delayedFrame?.cancel()
            delayedFrame = nil
        }
    }
}

extension AppLoop {
    /// Feeds the service's events to the loop, from its snapshot on, and says when they end (unless the loop
    /// is leaving): the service stopped or went away, after a connection that lasted this long.
    fileprivate static func follow(_ service: ServiceLink, clock: C, sink: AsyncStream<Input>.Continuation) async {
        let since = clock.now
        for await part in service.events() {
            switch part {
            case .events(let events): sink.yield(.managerEvents(events))
            case .live: sink.yield(.message(.service(.live)))
            }
        }
        guard !Task.isCancelled else { return }
        sink.yield(.message(.service(.lost(after: since.duration(to: clock.now)))))
    }
}
