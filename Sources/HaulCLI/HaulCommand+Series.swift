import ArgumentParser
import HaulCore

/// The command line's URLs as downloads: each is a numbered series as curl globs it (`URLGlob`), unless -g.
extension HaulCommand {
    /// Whether -O names each URL of the one URL's series apart: it holds `#1`, `#2`... for its values.
    var outputNamesEach: Bool {
        guard let output, urls.count == 1, inputFile == nil, !globoff, URLGlob.mayGlob(urls[0]),
            let glob = try? URLGlob(urls[0])
        else { return false }
        return URLGlob.usesValues(output, globs: glob.globs)
    }

    /// Reads each URL's series; refuses a malformed pattern, one past `URLGlob.maxURLs` (before any URL is
    /// made), and an -O whose `#N` makes a name that is not a plain file name for one of its URLs. Returns how
    /// many URLs the command line names.
    func checkSeries() throws -> Int {
        var count = 0
        for url in urls {
            guard !globoff, URLGlob.mayGlob(url) else {
                count += 1
                continue
            }
            let glob: URLGlob
            do { glob = try URLGlob(url) } catch { throw ValidationError("'\(URLRedaction.masked(url))': \(error.message)") }
            count += glob.count
            if let output, URLGlob.usesValues(output, globs: glob.globs) { try checkNames(output, of: glob) }
        }
        return count
    }

    /// Each name -O's `#N` makes for `glob`'s URLs is a plain file name (a value may hold a `/`). `#N` is read
    /// in the name alone, not in a directory -O names.
    private func checkNames(_ output: String, of glob: URLGlob) throws {
        // A template that is no name is `placement`'s to refuse, in `validate`.
        guard let template = try? Self.placement(output: output, outputDirectory: outputDirectory).name else { return }
        for expansion in glob {
            let name = URLGlob.name(template, values: expansion.values)
            if let problem = FileNaming.problem(withPlainName: name) {
                throw ValidationError("--output '\(output)' makes '\(JobOptions.shown(name))' for "
                                      + "\(URLRedaction.masked(expansion.url)), which \(problem)")
            }
        }
    }

    /// The command line's URLs as downloads, in order: each pattern's series, named by -O's `#N` when it has
    /// them; the one URL with --mirror's sources. `validate` has refused what this cannot make.
    func commandLineEntries() -> [InputEntry] {
        let template = output.flatMap { try? Self.placement(output: $0, outputDirectory: outputDirectory).name }
        var entries: [InputEntry] = []
        let urls = plainURLs
        entries.reserveCapacity(urls.count)
        for url in urls {
            guard !globoff, URLGlob.mayGlob(url), let glob = try? URLGlob(url) else {
                entries.append(InputEntry(url: url, mirrors: mirrors))
                continue
            }
            let named = template.flatMap { URLGlob.usesValues($0, globs: glob.globs) ? $0 : nil }
            entries.reserveCapacity(entries.count + glob.count)
            for expansion in glob {
                var entry = InputEntry(url: expansion.url, mirrors: mirrors)
                if let named { entry.options.outputName = URLGlob.name(named, values: expansion.values) }
                entries.append(entry)
            }
        }
        return entries
    }
}
