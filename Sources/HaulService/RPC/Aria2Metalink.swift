import Foundation
import HaulCore
import HaulServiceClient

/// aria2's `addMetalink(metalink, options?, position?)`: the document base64-encoded, one download per file it
/// describes, answered with their GIDs in the document's order. The document is read as any metalink is
/// (`Metalink.parse`: no DTD, no entity, bounded), and the files go where `addUri`'s would (`dir` checked
/// against the allowed roots); a multi-file metalink's go into one folder, `metalink/`, as the call gives the
/// document no name. A file that is refused (a name that would leave that folder, no source of a scheme haul
/// fetches) is left out, in one line of the service's log each, and the call answers the GIDs of the others,
/// as aria2 does; when no file is left, it fails naming why.
extension Service {
    func addMetalink(_ p: Parameters, paths: Aria2Paths) async -> Outcome {
        guard let text = p[0]?.string else { return .failure(.aria2("addMetalink needs the metalink, base64-encoded")) }
        // Base64 is 4 characters for 3 bytes: a longer text would decode past the document bound.
        guard text.utf8.count <= (Metalink.Limits().bytes / 3 + 1) * 4 + 4096 else {
            return .failure(.aria2("the metalink is larger than \(Metalink.Limits().bytes >> 20) MiB"))
        }
        guard let document = Data(base64Encoded: text, options: .ignoreUnknownCharacters) else {
            return .failure(.aria2("the metalink is not base64"))
        }
        let options: Aria2Options
        switch Aria2Options.parse(p[1], paths: paths) {
        case .success(let parsed): options = parsed
        case .failure(let failure): return .failure(failure)
        }
        var position: Int?
        if let value = p[2] {
            guard let number = value.integer, number >= 0 else { return .failure(.aria2("position must be 0 or more")) }
            position = Int(Swift.min(number, Int64(Int32.max)))
        }
        var template = DownloadJob(url: "", outputDirectory: paths.base)
        template.transfer.maxReceiveRate = aria2Globals.downloadLimit
        options.apply(to: &template, split: aria2Globals.split, connectionsPerServer: aria2Globals.connectionsPerServer)
        let planned: MetalinkJobs.Planned
        switch MetalinkLoad.jobs(fromDocument: [UInt8](document), name: nil, label: "metalink", category: .usage,
                                 template: template, locations: []) {
        case .success(let plan): planned = plan
        case .failure(let error): return .failure(.aria2(error.message))
        }
        for line in planned.notes + planned.refused { ServiceRunner.log("haul service: addMetalink: \(line)") }
        guard !planned.jobs.isEmpty else {
            return .failure(.aria2(planned.refusal?.message ?? "metalink: no file to download"))
        }
        let added: [Wire.Added]
        do {
            added = try await add(planned.jobs, paused: options.pause ?? false)
        } catch {
            return .failure(.aria2("cannot store the downloads: \(error.message)"))
        }
        if let position {
            await settled()
            for (offset, entry) in added.enumerated() { await moveWaiting(entry.id, to: position + offset) }
        }
        return .success(.array(added.compactMap { roster[$0.id]?.gid }.map { .string($0) }))
    }
}
