import HaulCLI

/// `haul`: the command line and the full-screen interface, a client of the per-user service. The service
/// and `--demo`'s sample server are in `haul-server`, which this hands them to (`ServerSide`).
@main
enum Haul {
    static func main() async {
        await Entry.main(server: nil)
    }
}
