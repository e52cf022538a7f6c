/// The program version, shown by `--version` and sent in the User-Agent.
package enum HaulVersion {
    package static let string = "0.1.0"
}
