import Testing
@testable import HaulCore
@testable import HaulTUI

/// A picture's failure carries its category as data (what `haul view` exits with), beside the same words.
@Suite struct PictureErrorCategoryTests {
    @Test func aFileThatCannotBeOpenedIsFileIO() {
        let error = #expect(throws: PictureError.self) { try PictureImage(path: "/nonexistent/haul-picture.jpg") }
        #expect(error?.category == .fileIO)
        #expect(error?.message == "cannot open: No such file or directory")
    }

    @Test func whatTheBytesHoldIsOther() {
        let error = #expect(throws: PictureError.self) { try PictureImage(bytes: Array("GIF89a".utf8)) }
        #expect(error?.category == .other)
        #expect(error == PictureError("not a JPEG"))
    }
}
