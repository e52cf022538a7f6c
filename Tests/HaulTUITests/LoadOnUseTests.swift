import CChafa
import CJPEG
import CLoadOnUse
import CPNG
@testable import HaulTUI
import Glibc
import Testing

/// The loader of the libraries haul maps only when it first uses them (ncurses, libjpeg, libpng, libchafa):
/// a library found, one missing, one without a function haul calls.
@Suite struct LoadOnUseTests {
    /// A `haul_library` for `soname` with `names` to look up; `body` gets it and its table of functions.
    private func withLibrary<T>(_ soname: String, _ names: [String],
                                _ body: (inout haul_library, UnsafeMutablePointer<UnsafeMutableRawPointer?>) -> T) -> T {
        let soname = strdup(soname)!
        let names = names.map { UnsafePointer(strdup($0)!) }
        let table = UnsafeMutablePointer<UnsafePointer<CChar>?>.allocate(capacity: names.count)
        let functions = UnsafeMutablePointer<UnsafeMutableRawPointer?>.allocate(capacity: names.count)
        defer {
            free(soname)
            names.forEach { free(UnsafeMutablePointer(mutating: $0)) }
            table.deallocate()
            functions.deallocate()
        }
        for (index, name) in names.enumerated() { table[index] = name }
        functions.initialize(repeating: nil, count: names.count)
        var library = haul_library()
        library.soname = UnsafePointer(soname)
        library.names = UnsafePointer(table)
        library.functions = functions
        library.count = names.count
        return body(&library, functions)
    }

    /// What `haul_library_load` says, and its message.
    private func load(_ library: inout haul_library) -> (Int32, String) {
        var status: Int32 = 0
        let failure = LoadedLibrary.failure { message, size in
            status = haul_library_load(&library, message, size)
            return status
        }
        return (status, failure ?? "")
    }

    @Test func aLibraryThatLoadsGivesItsFunctions() {
        withLibrary("libm.so.6", ["cos", "sqrt"]) { library, functions in
            let (status, message) = load(&library)
            #expect(status == 0)
            #expect(message.isEmpty)
            let cosine = unsafeBitCast(functions[0], to: (@convention(c) (Double) -> Double).self)
            let root = unsafeBitCast(functions[1], to: (@convention(c) (Double) -> Double).self)
            #expect(cosine(0) == 1)
            #expect(root(16) == 4)
        }
    }

    @Test func aMissingLibraryIsAOneLineFailureEveryTimeItIsAsked() {
        withLibrary("libhaul-missing.so.0", ["anything"]) { library, functions in
            let first = load(&library)
            #expect(first.0 == -1)
            #expect(first.1.hasPrefix("cannot load libhaul-missing.so.0: "))
            #expect(first.1.contains("No such file"))
            #expect(!first.1.contains("\n"))
            #expect(load(&library) == first)
            #expect(functions[0] == nil)
        }
    }

    @Test func aLibraryWithoutAFunctionHaulCallsIsRefused() {
        withLibrary("libm.so.6", ["cos", "haul_no_such_function"]) { library, _ in
            let (status, message) = load(&library)
            #expect(status == -1)
            #expect(message == "cannot load libm.so.6: no function haul_no_such_function")
        }
    }
}

/// A library that cannot be loaded is named in one line: a picture's error, the screen's fallback.
@Suite struct LoadedLibraryTests {
    @Test func aLibraryThatLoadsHasNoFailure() {
        #expect(LoadedLibrary.failure { _, _ in 0 } == nil)
    }

    @Test func aLibraryThatCannotLoadSaysWhy() {
        let failure = LoadedLibrary.failure { message, size in
            let text = "cannot load libjpeg.so.62: cannot open shared object file: No such file or directory"
            _ = text.withCString { strncpy(message!, $0, size) }
            return -1
        }
        #expect(failure == "cannot load libjpeg.so.62: cannot open shared object file: No such file or directory")
    }

    @Test func thePictureLibrariesLoadHere() {
        #expect(LoadedLibrary.failure(haul_jpeg_load) == nil)
        #expect(LoadedLibrary.failure(haul_png_load) == nil)
        #expect(ChafaPicture.unavailable == nil)
    }
}
