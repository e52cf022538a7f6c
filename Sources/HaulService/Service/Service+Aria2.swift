import Foundation
import HaulCore
import HaulTorrent
import HaulServiceClient

/// The aria2 JSON-RPC methods, on the service's own model: each maps onto the commands the control socket
/// gives (`add`, `perform`) and reads the same roster, so a download added by either face is in both.
/// Parameters arrive without the `token:` (the face checked it).
extension Service {
    typealias Outcome = Result<JSON, JSONRPC.Failure>

    /// The methods haul answers (`system.listMethods`), in aria2's order.
    static let aria2Methods = [
        "aria2.addUri", "aria2.addTorrent", "aria2.getPeers", "aria2.addMetalink", "aria2.remove", "aria2.pause",
        "aria2.forcePause", "aria2.pauseAll", "aria2.forcePauseAll", "aria2.unpause", "aria2.unpauseAll",
        "aria2.forceRemove", "aria2.changePosition", "aria2.tellStatus", "aria2.getUris", "aria2.getFiles",
        "aria2.getServers", "aria2.tellActive", "aria2.tellWaiting", "aria2.tellStopped", "aria2.getOption",
        "aria2.changeUri", "aria2.changeOption", "aria2.getGlobalOption", "aria2.changeGlobalOption",
        "aria2.purgeDownloadResult", "aria2.removeDownloadResult", "aria2.getVersion", "aria2.getSessionInfo",
        "aria2.shutdown", "aria2.forceShutdown", "aria2.getGlobalStat", "aria2.saveSession", "system.multicall",
        "system.listMethods", "system.listNotifications",
    ]

    static let aria2Notifications = [
        "aria2.onDownloadStart", "aria2.onDownloadPause", "aria2.onDownloadStop", "aria2.onDownloadComplete",
        "aria2.onDownloadError", "aria2.onBtDownloadComplete",
    ]

    /// One aria2 method (not `system.multicall`, which the face unrolls), answered once what it changed is
    /// stored and listed (`settled`).
    func aria2(_ method: String, _ params: [JSON], paths: Aria2Paths) async -> Outcome {
        let outcome = await aria2Method(method, params, paths: paths)
        await settled()
        return outcome
    }

    private func aria2Method(_ method: String, _ params: [JSON], paths: Aria2Paths) async -> Outcome {
        let p = Parameters(params)
        switch method {
        case "aria2.addUri": return await addUri(p, paths: paths)
        case "aria2.addMetalink": return await addMetalink(p, paths: paths)
        case "aria2.addTorrent": return await addTorrent(p, paths: paths)
        case "aria2.remove", "aria2.forceRemove": return await stop(p, as: .cancelled)
        case "aria2.pause", "aria2.forcePause": return await stop(p, as: .paused)
        case "aria2.pauseAll", "aria2.forcePauseAll":
            await manager.pauseAll()
            return .success("OK")
        case "aria2.unpause": return await unpause(p)
        case "aria2.unpauseAll":
            await manager.resumeAll(inQueueOrder: roster.waiting)
            return .success("OK")
        case "aria2.tellStatus":
            return await withDownload(p) { entry in await status(entry, keys: p.keys(at: 1)) }
        case "aria2.getUris": return withEntry(p) { Aria2Status.uris(of: $0) }
        case "aria2.getFiles": return withEntry(p) { Aria2Status.files(of: $0) }
        case "aria2.getServers": return servers(p)
        case "aria2.getPeers":
            return withEntry(p) { _ in .array([]) }
        case "aria2.tellActive":
            let keys = p.keys(at: 0)
            var list: [JSON] = []
            for id in roster.order {
                guard let entry = roster[id], entry.state.isActive else { continue }
                list.append(await status(entry, keys: keys))
            }
            return .success(.array(list))
        case "aria2.tellWaiting": return await page(of: roster.waiting, p)
        case "aria2.tellStopped":
            return await page(of: roster.order.filter { roster[$0].map { Aria2Status.list(of: $0.state) == .stopped } ?? false }, p)
        case "aria2.changePosition": return await changePosition(p)
        case "aria2.changeUri": return await changeUri(p)
        case "aria2.getOption": return await options(p)
        case "aria2.changeOption": return await changeOption(p, paths: paths)
        case "aria2.getGlobalOption": return .success(globalOptions(paths: paths))
        case "aria2.changeGlobalOption": return await changeGlobalOption(p)
        case "aria2.getGlobalStat": return .success(globalStat())
        case "aria2.purgeDownloadResult":
            for id in roster.order where roster[id].map({ Aria2Status.list(of: $0.state) == .stopped }) ?? false {
                await manager.remove(id)
            }
            return .success("OK")
        case "aria2.removeDownloadResult":
            switch lookup(p) {
            case .failure(let failure): return .failure(failure)
            case .success(let entry):
                guard Aria2Status.list(of: entry.state) == .stopped else {
                    return .failure(.aria2("Could not remove download result of GID#\(entry.gid)"))
                }
                await manager.remove(entry.id)
                return .success("OK")
            }
        case "aria2.getVersion":
            return .success(["version": "1.36.0", "enabledFeatures": ["Async DNS", "GZip", "HTTPS", "Message Digest"],
                             "haul": .string(HaulVersion.string)])
        case "aria2.getSessionInfo": return .success(["sessionId": .string(sessionID)])
        case "aria2.saveSession":
            // The queue is always saved: every change is in haul.sqlite as it happens.
            return .success("OK")
        case "aria2.shutdown", "aria2.forceShutdown":
            requestStop()
            return .success("OK")
        case "system.listMethods": return .success(.array(Self.aria2Methods.map { .string($0) }))
        case "system.listNotifications": return .success(.array(Self.aria2Notifications.map { .string($0) }))
        default: return .failure(.methodNotFound)
        }
    }

    // MARK: adding

    private func addUri(_ p: Parameters, paths: Aria2Paths) async -> Outcome {
        guard let uris = p[0]?.array, !uris.isEmpty else { return .failure(.aria2("addUri needs a list of URIs")) }
        // As aria2: every URI of the call is a source of the one file.
        let urls = uris.compactMap(\.string)
        guard urls.count == uris.count else { return .failure(.aria2("a URI must be a string")) }
        if TorrentJob.isMagnet(urls[0]) { return await addTorrent(magnet: urls[0], p, paths: paths) }
        if let problem = URLCheck.problem(with: urls[0]) { return .failure(.aria2(problem)) }
        let sources: [DownloadSource]
        do { sources = try JobOptions.sources(urls) } catch { return .failure(.aria2(error.message)) }
        let options: Aria2Options
        switch Aria2Options.parse(p[1], paths: paths) {
        case .success(let parsed): options = parsed
        case .failure(let failure): return .failure(failure)
        }
        var job = DownloadJob(sources: sources, outputDirectory: paths.base)
        job.transfer.maxReceiveRate = aria2Globals.downloadLimit
        job.connectionsPerServer = aria2Globals.connectionsPerServer
        options.apply(to: &job, split: aria2Globals.split, connectionsPerServer: aria2Globals.connectionsPerServer)
        return await add(job, options: options, position: p[2])
    }

    /// `addTorrent(torrent, uris?, options?, position?)`: the .torrent's bytes base64-encoded (its web seeds,
    /// `uris`, are not used); and `addUri` of a magnet. libtorrent runs it; `select-file`, `seed-ratio`,
    /// `seed-time`, `bt-tracker` and `dir` as aria2 reads them.
    private func addTorrent(_ p: Parameters, paths: Aria2Paths) async -> Outcome {
        guard let text = p[0]?.string else { return .failure(.aria2("addTorrent needs the torrent, base64-encoded")) }
        guard let bytes = Data(base64Encoded: text, options: .ignoreUnknownCharacters), !bytes.isEmpty else {
            return .failure(.aria2("the torrent is not base64"))
        }
        let metadata: TorrentMetadata
        do { metadata = try TorrentMetadata.parse(torrent: Array(bytes)) } catch { return .failure(.aria2(error.message)) }
        let options: Aria2Options
        switch Aria2Options.parse(p[2], paths: paths) {
        case .success(let parsed): options = parsed
        case .failure(let failure): return .failure(failure)
        }
        var spec = options.torrent
        spec.metainfo = Array(bytes)
        return await addTorrent(spec, label: FileNaming.sanitize(metadata.name) + ".torrent", options: options,
                                position: p[3], paths: paths)
    }

    private func addTorrent(magnet: String, _ p: Parameters, paths: Aria2Paths) async -> Outcome {
        do { _ = try TorrentMetadata.parse(magnet: magnet) } catch { return .failure(.aria2(error.message)) }
        let options: Aria2Options
        switch Aria2Options.parse(p[1], paths: paths) {
        case .success(let parsed): options = parsed
        case .failure(let failure): return .failure(failure)
        }
        var spec = options.torrent
        spec.magnet = magnet
        return await addTorrent(spec, label: magnet, options: options, position: p[2], paths: paths)
    }

    private func addTorrent(_ spec: TorrentSpec, label: String, options: Aria2Options, position: JSON?,
                            paths: Aria2Paths) async -> Outcome {
        var job = DownloadJob(url: label, outputDirectory: paths.base)
        options.apply(to: &job, split: aria2Globals.split, connectionsPerServer: aria2Globals.connectionsPerServer)
        job.torrent = spec
        return await add(job, options: options, position: position)
    }

    /// Adds `job` as the call asked (its gid, paused, at `position` of the waiting ones): the new GID.
    private func add(_ job: DownloadJob, options: Aria2Options, position value: JSON?) async -> Outcome {
        var position: Int?
        if let value {
            guard let number = value.integer, number >= 0 else { return .failure(.aria2("position must be 0 or more")) }
            position = Int(Swift.min(number, Int64(Int32.max)))
        }
        if let gid = options.gid, roster.ids[gid] != nil {
            return .failure(.aria2("GID#\(gid) is not unique"))
        }
        let added: [Wire.Added]
        do {
            added = try await add([job], gids: options.gid.map { [$0] }, paused: options.pause ?? false)
        } catch {
            return .failure(.aria2("cannot store the download: \(error.message)"))
        }
        guard let id = added.first?.id, let gid = roster[id]?.gid else { return .failure(.aria2("not added")) }
        if let position { await moveWaiting(id, to: position) }
        return .success(.string(gid))
    }

    // MARK: one download

    private func lookup(_ p: Parameters) -> Result<Roster.Entry, JSONRPC.Failure> {
        guard let text = p[0]?.string else { return .failure(.aria2("the first parameter must be a GID")) }
        let gid = text.lowercased()
        guard GID.isPrefix(gid) else { return .failure(.aria2("Invalid GID \(Aria2Options.quoted(text))")) }
        if let id = roster.ids[gid], let entry = roster[id] { return .success(entry) }
        // A unique prefix, as aria2 accepts.
        if gid.count < 16 {
            let matches = roster.ids.filter { $0.key.hasPrefix(gid) }
            if matches.count == 1, let match = matches.first, let entry = roster[match.value] { return .success(entry) }
            if matches.count > 1 { return .failure(.aria2("GID \(gid) is ambiguous")) }
        }
        return .failure(.aria2("GID \(gid) is not found"))
    }

    private func withEntry(_ p: Parameters, _ body: (Roster.Entry) -> JSON) -> Outcome {
        lookup(p).map(body)
    }

    private func withDownload<T>(_ p: Parameters, _ body: (Roster.Entry) async -> T) async -> Result<T, JSONRPC.Failure> {
        switch lookup(p) {
        case .success(let entry): return .success(await body(entry))
        case .failure(let failure): return .failure(failure)
        }
    }

    private func status(_ entry: Roster.Entry, keys: Set<String>?) async -> JSON {
        let job = await manager.job(of: entry.id)
        // Read after the wait: a metalink's files may have been added meanwhile.
        let now = roster[entry.id] ?? entry
        let links = (followedBy: now.followedBy.compactMap { roster[$0]?.gid },
                     following: now.following.flatMap { roster[$0]?.gid })
        return Aria2Status.status(of: entry, job: job, keys: keys, at: clock.moment, links: links,
                                  completed: { Aria2Status.completedRanges(of: entry) })
    }

    private func stop(_ p: Parameters, as outcome: DownloadState) async -> Outcome {
        switch lookup(p) {
        case .failure(let failure): return .failure(failure)
        case .success(let entry):
            switch (outcome, Aria2Status.list(of: entry.state)) {
            case (.cancelled, .stopped):
                return .failure(.aria2("Active Download not found for GID#\(entry.gid)"))
            case (.paused, _) where entry.state.isFinished:
                return .failure(.aria2("GID#\(entry.gid) cannot be paused now"))
            default:
                if outcome == .paused { await manager.pause(entry.id) } else { await manager.cancel(entry.id) }
                return .success(.string(entry.gid))
            }
        }
    }

    private func unpause(_ p: Parameters) async -> Outcome {
        switch lookup(p) {
        case .failure(let failure): return .failure(failure)
        case .success(let entry):
            guard entry.state == .paused else { return .failure(.aria2("GID#\(entry.gid) cannot be unpaused now")) }
            await manager.resume(entry.id)
            // It keeps its place in the waiting list.
            await manager.reorderQueue(roster.waiting)
            return .success(.string(entry.gid))
        }
    }

    /// `changeUri(gid, fileIndex, delUris, addUris[, position])`: aria2's semantics on the download's sources
    /// (`DownloadManager.changeSources`): `[deleted, added]`. A running download is refused (pause it first).
    private func changeUri(_ p: Parameters) async -> Outcome {
        switch lookup(p) {
        case .failure(let failure): return .failure(failure)
        case .success(let entry):
            guard p[1]?.integer == 1 || p[1]?.string == "1" else { return .failure(.aria2("fileIndex must be 1")) }
            guard let deleting = p[2]?.array?.compactMap(\.string), let adding = p[3]?.array?.compactMap(\.string) else {
                return .failure(.aria2("delUris and addUris must be lists of URIs"))
            }
            var position: Int?
            if let value = p[4] {
                guard let number = value.integer, number >= 0 else { return .failure(.aria2("position must be 0 or more")) }
                position = Int(Swift.min(number, Int64(Int32.max)))
            }
            switch await manager.changeSources(entry.id, deleting: deleting, adding: adding, at: position) {
            case .success(let (deleted, added)):
                if let job = await manager.job(of: entry.id) {
                    roster.modify(entry.id) { $0.url = URLRedaction.masked(job.url) }
                    if let problem = keep(job, of: entry.id) { return .failure(.aria2(problem.error)) }
                }
                await settled()
                return .success([.int(Int64(deleted)), .int(Int64(added))])
            case .failure(let error):
                return .failure(.aria2("GID#\(entry.gid): \(error.message)"))
            }
        }
    }

    private func servers(_ p: Parameters) -> Outcome {
        switch lookup(p) {
        case .failure(let failure): return .failure(failure)
        case .success(let entry):
            guard entry.state.isActive else { return .failure(.aria2("No active download for GID#\(entry.gid)")) }
            return .success([["index": "1", "servers": Aria2Status.servers(of: entry, at: clock.moment)]])
        }
    }

    /// `tellWaiting`/`tellStopped(offset, num, keys)`: a negative offset counts from the end, and then
    /// the list comes in reverse order, as aria2 gives it.
    private func page(of ids: [DownloadID], _ p: Parameters) async -> Outcome {
        guard let offset = p[0]?.integer, let count = p[1]?.integer, count >= 0 else {
            return .failure(.aria2("offset and num must be integers"))
        }
        let keys = p.keys(at: 2)
        var picked: [DownloadID] = []
        if offset >= 0 {
            var index = Int(Swift.min(offset, Int64(ids.count)))
            while index < ids.count, picked.count < count {
                picked.append(ids[index])
                index += 1
            }
        } else {
            var index = ids.count + Int(Swift.max(offset, -Int64(ids.count) - 1))
            while index >= 0, index < ids.count, picked.count < count {
                picked.append(ids[index])
                index -= 1
            }
        }
        var list: [JSON] = []
        list.reserveCapacity(picked.count)
        for id in picked {
            if let entry = roster[id] { list.append(await status(entry, keys: keys)) }
        }
        return .success(.array(list))
    }

    private func changePosition(_ p: Parameters) async -> Outcome {
        switch lookup(p) {
        case .failure(let failure): return .failure(failure)
        case .success(let entry):
            guard let position = p[1]?.integer, let how = p[2]?.string else {
                return .failure(.aria2("changePosition needs GID, POS and HOW"))
            }
            guard let current = roster.waiting.firstIndex(of: entry.id) else {
                return .failure(.aria2("GID#\(entry.gid) not found in the waiting queue"))
            }
            let size = Int64(roster.waiting.count)
            let target: Int64
            switch how {
            case "POS_SET": target = position
            case "POS_CUR": target = Int64(current) + position
            case "POS_END": target = size - 1 + position
            default: return .failure(.aria2("HOW must be POS_SET, POS_CUR or POS_END"))
            }
            let moved = await moveWaiting(entry.id, to: Int(Swift.max(0, Swift.min(target, size))))
            return .success(.int(Int64(moved ?? current)))
        }
    }

    // MARK: options

    private func options(_ p: Parameters) async -> Outcome {
        switch lookup(p) {
        case .failure(let failure): return .failure(failure)
        case .success(let entry):
            guard let job = await manager.job(of: entry.id) else { return .failure(.aria2("GID#\(entry.gid) has no options")) }
            var members: [(String, JSON)] = [
                ("dir", .string(job.outputDirectory)),
                ("split", .number(job.segments)),
                ("max-connection-per-server", .number(job.connectionsPerServer)),
                ("max-download-limit", .number(job.transfer.maxReceiveRate ?? 0)),
                ("user-agent", .string(job.transfer.userAgent)),
                ("max-tries", .number(job.retries + 1)),
                ("continue", .string(job.resume ? "true" : "false")),
                ("stream-piece-selector", .string(job.sequential ? "inorder" : "default")),
            ]
            if let name = job.outputName { members.append(("out", .string(name))) }
            let headers = job.headers.filter { !WithheldJob.isSecret(header: $0) }
            if !headers.isEmpty { members.append(("header", .array(headers.map { .string($0) }))) }
            if let proxy = job.transfer.proxy { members.append(("all-proxy", .string(URLRedaction.masked(proxy)))) }
            if let checksum = job.checksum {
                let name = switch checksum.algorithm.rawValue {
                case "sha256": "sha-256"
                case "sha1": "sha-1"
                default: checksum.algorithm.rawValue
                }
                members.append(("checksum", .string("\(name)=\(checksum.hex)")))
            }
            return .success(.object(members))
        }
    }

    /// `max-download-limit` changes at once, even while the download runs (the TUI's live rate for its row);
    /// the other options change a download that is not running, and are refused for one that runs.
    private func changeOption(_ p: Parameters, paths: Aria2Paths) async -> Outcome {
        switch lookup(p) {
        case .failure(let failure): return .failure(failure)
        case .success(let entry):
            let options: Aria2Options
            switch Aria2Options.parse(p[1], paths: paths) {
            case .success(let parsed): options = parsed
            case .failure(let failure): return .failure(failure)
            }
            if let limit = options.downloadLimit { await manager.setReceiveLimit(entry.id, limit) }
            var rest = options
            rest.downloadLimit = nil
            rest.pause = nil
            rest.gid = nil
            guard rest != Aria2Options() else { return .success("OK") }
            let globals = aria2Globals
            let changed = await manager.updateJob(entry.id) { job in
                rest.apply(to: &job, split: globals.split, connectionsPerServer: globals.connectionsPerServer)
            }
            guard changed else {
                return .failure(.aria2("GID#\(entry.gid) is running: only max-download-limit can change now; pause it first"))
            }
            if let job = await manager.job(of: entry.id) {
                roster.modify(entry.id) { row in
                    row.directory = job.outputDirectory
                    if row.path == nil { row.name = job.plannedName }
                }
                if let problem = keep(job, of: entry.id) { return .failure(.aria2(problem.error)) }
            }
            return .success("OK")
        }
    }

    func globalOptions(paths: Aria2Paths) -> JSON {
        let globals = aria2Globals
        return [
            "dir": .string(paths.base),
            "max-concurrent-downloads": .number(globals.concurrency),
            "max-overall-download-limit": .number(globals.overallLimit ?? 0),
            "max-download-limit": .number(globals.downloadLimit ?? 0),
            "split": .number(globals.split),
            "max-connection-per-server": .number(globals.connectionsPerServer),
            "continue": "true",
            "auto-file-renaming": "true",
            "allow-overwrite": "false",
            "check-certificate": "true",
            "max-tries": "6",
            "user-agent": .string(TransferOptions().userAgent),
            "max-upload-limit": "0",
            "max-overall-upload-limit": "0",
        ]
    }

    private func changeGlobalOption(_ p: Parameters) async -> Outcome {
        guard let members = p[0]?.members else { return .failure(.aria2("changeGlobalOption needs a struct of options")) }
        var globals = aria2Globals
        for (key, value) in members where value != .null {
            let setting: GlobalSetting
            switch key {
            case "max-overall-download-limit": setting = .rate(\.overallLimit)
            case "max-download-limit": setting = .rate(\.downloadLimit)
            // The range of the command line's -j.
            case "max-concurrent-downloads": setting = .count(\.concurrency, DownloadManager.concurrencyRange)
            case "split": setting = .count(\.split, JobOptions.segmentRange)
            case "max-connection-per-server": setting = .count(\.connectionsPerServer, JobOptions.segmentRange)
            default:
                // Unknown, path-bearing and process-wide keys: ignored, as aria2 ignores unknown ones.
                continue
            }
            // Read and checked as a download's own options are (`JobOptions`).
            do throws(JSONRPC.Failure) {
                let text = try Aria2Options.text(key, value)
                do throws(JobOptions.Problem) {
                    switch setting {
                    case .rate(let path): globals[keyPath: path] = try JobOptions.rate(key, text)
                    case .count(let path, let range): globals[keyPath: path] = try JobOptions.count(key, text, in: range)
                    }
                } catch {
                    throw .aria2(error.message)
                }
            } catch {
                return .failure(error)
            }
        }
        if globals.overallLimit != aria2Globals.overallLimit { await manager.setOverallReceiveLimit(globals.overallLimit) }
        if globals.concurrency != aria2Globals.concurrency { await manager.setConcurrency(globals.concurrency) }
        aria2Globals = globals
        return .success("OK")
    }

    /// What a `changeGlobalOption` key sets, and how its value is read.
    private enum GlobalSetting {
        case rate(WritableKeyPath<Aria2Globals, Int64?>)
        case count(WritableKeyPath<Aria2Globals, Int>, ClosedRange<Int>)
    }

    private func globalStat() -> JSON {
        let now = clock.moment
        var speed = 0.0
        var active = 0, waiting = 0, stopped = 0
        for id in roster.order {
            guard let entry = roster[id] else { continue }
            switch Aria2Status.list(of: entry.state) {
            case .active:
                active += 1
                speed += entry.record.speed(at: now)
            case .waiting: waiting += 1
            case .stopped: stopped += 1
            }
        }
        return [
            "downloadSpeed": .number(Int64(speed.rounded())), "uploadSpeed": "0", "numActive": .number(active),
            "numWaiting": .number(waiting), "numStopped": .number(stopped), "numStoppedTotal": .number(stopped),
        ]
    }
}

/// A call's parameters by position.
struct Parameters {
    let values: [JSON]
    init(_ values: [JSON]) { self.values = values }

    subscript(index: Int) -> JSON? {
        index < values.count && values[index] != .null ? values[index] : nil
    }

    /// A `keys` filter: an array of key names; nil (all keys) when absent or empty.
    func keys(at index: Int) -> Set<String>? {
        guard let list = self[index]?.array else { return nil }
        let names = list.compactMap(\.string)
        return names.isEmpty ? nil : Set(names)
    }
}
