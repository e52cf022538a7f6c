import Foundation
import Testing
@testable import HaulCore
@testable import HaulService
@testable import HaulServiceClient

/// The state "no space" (issue 75) on the faces that are not the screen: the socket's events, the store's
/// columns, aria2's words; its reason travels with it.
@Suite struct NoSpaceFacesTests {
    static let why = HaulError(.fileIO, "not enough free space: needs 47.7 MiB, 20.0 MiB free in /d",
                               reason: .noRoom(needed: 50_000_000))

    @Test func theStateAndItsReasonCrossTheSocket() throws {
        let event = ManagerEvent.state(id: 2, .noSpace(Self.why))
        let data = Data(event.json(with: Wire.encoder()))
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(object["state"] as? String == "no space")
        #expect((object["error"] as? [String: Any])?["reason"] as? String == "no-room-50000000")
        let back = try Wire.decode(ManagerEvent.self, from: data)
        guard case .state(2, .noSpace(let error)) = back else { Issue.record("read back as \(back)"); return }
        #expect(error.reason == .noRoom(needed: 50_000_000) && error.message == Self.why.message)
    }

    @Test func theStoreKeepsItAsAStateToContinue() {
        let state = DownloadState(storedName: "no space", errorCategory: "file-io", errorMessage: Self.why.message,
                                  errorReason: "no-room-50000000")
        #expect(state?.isWaitingForRoom == true && state?.error?.reason == .noRoom(needed: 50_000_000))
        #expect(DownloadState.unfinishedNames.contains("no space"), "a new service looks at it again")
        #expect(DownloadState.noSpace(Self.why).endsRun == false)
    }

    @Test func aria2SeesItWaiting() {
        #expect(Aria2Status.name(of: .noSpace(Self.why)) == "waiting")
        #expect(Aria2Status.list(of: .noSpace(Self.why)) == .waiting)
        #expect(Aria2Status.errorCode(Self.why) == 9, "aria2's 'not enough disk space'")
        #expect(Aria2Status.notification(from: .downloading, to: .noSpace(Self.why)) == nil)
    }
}
