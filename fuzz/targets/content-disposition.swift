// libFuzzer target: the input is a Content-Disposition value, a line feed, and a URL (the shape of the seeds in
// fuzz/corpus/content-disposition/). Names the download from both, from the URL alone, and from the whole input
// as a suggested name, and traps when a name breaks a promise of FileNaming (FuzzInvariants.swift).
// Built and run by fuzz/run, with FileNaming.swift compiled in.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzContentDisposition(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    let newline = bytes.firstIndex(of: 0x0A) ?? bytes.endIndex
    let header = String(decoding: bytes[..<newline], as: UTF8.self)
    let url = String(decoding: bytes[newline...].dropFirst(), as: UTF8.self)
    let whole = String(decoding: bytes, as: UTF8.self)

    if FileNaming.filename(fromContentDisposition: header)?.isEmpty == true {
        fatalError("an empty file name instead of nil from \(FuzzInvariants.literal(header))")
    }
    requireName(FileNaming.name(contentDisposition: header, url: url), "name(contentDisposition:url:)")
    requireName(FileNaming.name(contentDisposition: nil, url: url), "name(contentDisposition: nil, url:)")
    requireName(FileNaming.sanitize(whole), "sanitize")

    let limit = Int(bytes.first ?? 0)
    let cut = FileNaming.truncate(whole, toBytes: limit)
    if cut.utf8.count > limit { fatalError("truncate to \(limit) bytes gave \(FuzzInvariants.literal(cut))") }
    let (stem, ext) = FileNaming.split(whole)
    if !(stem + ext).utf8.elementsEqual(whole.utf8) { fatalError("split lost bytes") }
    return 0
}

func requireName(_ name: String, _ what: String) {
    let problems = FuzzInvariants.nameViolations(name, again: FileNaming.sanitize(name), maxBytes: FileNaming.maxBytes)
    if !problems.isEmpty {
        fatalError("\(what): \(FuzzInvariants.literal(name)): \(problems.joined(separator: "; "))")
    }
}
