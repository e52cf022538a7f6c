import ArgumentParser
import FoundationEssentials
import HaulCore

/// The config file's categories (`[categories.NAME]` tables, see `ConfigFile.categoryEntry`), carried as
/// hidden `--category-rule` arguments (a rule's JSON each, in the file's order), and `--category NAME|none`,
/// which picks one for this command line's downloads or turns them off. A group of its own in `haul URL`,
/// `haul add` and `haul service start|run`: the service places what `haul add` and aria2 give it by the rules
/// of the config file it read.
struct CategorySettings: ParsableArguments {
    @Option(name: .customLong("category"), help: ArgumentHelp(
        "Put these downloads in the folder of category NAME of the config file ([categories.NAME]), whatever the file is; 'none' keeps the categories off for them. By default a download whose directory is not given (-o, -O DIR/NAME) goes where the config's rules place it by its final name or media type.",
        valueName: "NAME|none"))
    var category: String?

    @Option(name: .customLong("category-rule"), help: .private)
    var encodedRules: [String] = []

    /// Whether this command line named the downloads' directory itself (`-o DIR`, `-O DIR/NAME`), as opposed
    /// to the config's `output-dir`: such downloads stay where they were told to go (`Entry.parse` sets it).
    var directoryGiven = false

    /// The rules, in the file's order. `validate` has refused a value that is not one.
    var rules: CategoryRules {
        CategoryRules(encodedRules.compactMap { try? JSONDecoder().decode(CategoryRule.self, from: Data($0.utf8)) })
    }

    /// A job's `category`: the one asked for, else none when the directory was given, else by the rules.
    var requested: String? {
        category ?? (directoryGiven ? CategoryRules.none : nil)
    }

    func validate() throws {
        for rule in encodedRules where (try? JSONDecoder().decode(CategoryRule.self, from: Data(rule.utf8))) == nil {
            throw ValidationError("--category-rule '\(rule)' is not a rule of the config file")
        }
        guard let category, category != CategoryRules.none else { return }
        let names = rules.rules.map(\.name)
        guard names.contains(category) else {
            throw ValidationError("--category \(category): the config file has no [categories.\(category)] ("
                + (names.isEmpty ? "it has no categories" : "it has " + names.joined(separator: ", ")) + "; or none)")
        }
    }

    /// The argument that carries `rule`.
    static func argument(_ rule: CategoryRule) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let json = (try? encoder.encode(rule)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
        return "--category-rule=" + json
    }
}
