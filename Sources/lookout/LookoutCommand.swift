import ArgumentParser
import Lookout
import LookoutHTTP2
import LookoutTLS
import LookoutModel

/// `lookout`: the command-line entry point.
@main
struct LookoutCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lookout",
        abstract: "An event-monitoring HTTP forward proxy.",
        version: "lookout \(Session.version) (\(OpenSSLLibrary.shortDescription), \(NGHTTP2Library.shortDescription))",
        subcommands: [RunCommand.self, ConfigCommand.self, PolicyCommand.self, CACommand.self, PinCommand.self, CacheCommand.self, LogCommand.self, HARCommand.self,
                      HeldCommand.self, ResumeCommand.self, AbortCommand.self, AnswerCommand.self, ResendCommand.self,
                      BreakpointCommand.self, DiffCommand.self, SimulateCommand.self, ReplayCommand.self, ExecCommand.self,
                      EnvCommand.self, PassthroughCommand.self, VerifyCommand.self]
    )
}
