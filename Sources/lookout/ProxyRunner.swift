import Dispatch
import Logging
import Lookout
import LookoutStages
import LookoutAdmin
import CoreMetrics
import LookoutConfig
import LookoutIO
import LookoutLive
import LookoutMetrics
import LookoutMonitors
import LookoutOTel
import LookoutTLS
import Prometheus
import LookoutModel
#if canImport(Glibc)
import Glibc
#endif

/// Owns a running proxy: the session, its log and metrics monitors, and the signal handlers.
/// Signal handlers live in this class, not in top-level code: a Dispatch source handler written in
/// `main.swift` compiles in Swift 6 mode but traps on its first event (the isolation check).
final class ProxyRunner: @unchecked Sendable {  // signal sources and state confined to `signalQueue`
    private let session: Session
    /// Nil when `log.enabled` is false.
    private let logMonitor: JSONLinesLogMonitor?
    /// Nil unless `otel.endpoint` is set.
    private let otelExporter: OTLPExporter?
    private let logger: Logger
    private let signalQueue = DispatchQueue(label: "lookout.signals")
    private var signalSources: [DispatchSourceSignal] = []
    /// Signalled once per signal source when Dispatch has registered it (see `start`).
    private let signalsRegistered = DispatchSemaphore(value: 0)
    private var stopping = false
    /// Reads the config file again (SIGHUP, `POST /admin/reload`, `config_watch`); nil without a file.
    private var reloader: ConfigReloader?

    init(configuration file: LookoutConfiguration, path: String? = nil, logger: Logger) throws {
        self.logger = logger
        // The log and the live view write the same summary records, and OpenTelemetry's log
        // records carry the same line: with them on, they run on the log's queue, are handed each
        // event in turn, and each summary is encoded once, by the first.
        let sharesRecords = file.log.enabled && (file.ui.enabled || (file.otel.isEnabled && file.otel.logs))
        let recordQueue = DispatchQueue(label: "lookout.monitor.records", qos: .utility)
        if file.log.enabled {
            let destination: LogDestination = file.log.path == "-" ? .standardOutput : .file(path: file.log.path)
            logMonitor = try JSONLinesLogMonitor(destination: destination, verbose: file.log.verbose,
                                                 revealSecrets: file.log.revealSecrets,
                                                 includeHeaders: file.log.includeHeaders,
                                                 sharesSummaryRecords: sharesRecords,
                                                 queue: recordQueue,
                                                 onError: { [logger] error in logger.error("traffic log: \(error)") })
        } else {
            logMonitor = nil
            logger.notice("traffic log disabled (log.enabled: false)")
        }
        if file.eventLoopSpinMicroseconds > 0 && !EventLoopGroup.canSpin {
            logger.warning("event_loop_spin_us: \(file.eventLoopSpinMicroseconds) has no effect: this kernel does not report CPU pressure (/proc/pressure/cpu), and event loops spin only while no thread waits for a CPU")
        }
        var monitors: [EventMonitor] = logMonitor.map { [$0] } ?? []
        var adminEndpoints: [any AdminEndpoint] = []
        // An https Collector is judged by the roots upstream origins are (trust.system_roots, trust.ca_files).
        let otelTrust = file.otel.isEnabled && file.otel.endpoint.hasPrefix("https://")
            ? DefaultTrustEvaluator(trustStore: try TrustStore(systemBundle: file.trust.systemRoots ? TrustStore.systemBundlePath : nil,
                                                               additionalCAFiles: file.trust.caFiles, allowsPartialChains: true)) : nil
        otelExporter = file.otel.isEnabled ? OTLPExporter(settings: file.otel, logger: logger, trust: otelTrust) : nil
        if let otelExporter {
            adminEndpoints.append(OTelStatus(exporter: otelExporter, endpoint: file.otel.endpoint))
            monitors.append(OTelMonitor(settings: file.otel, exporter: otelExporter, verbose: file.log.verbose,
                                        revealSecrets: file.log.revealSecrets, includeHeaders: file.log.includeHeaders,
                                        sharesSummaryRecords: sharesRecords, sharedQueue: file.log.enabled ? recordQueue : nil))
            logger.info("otel: \(file.otel.traces ? "traces" : "")\(file.otel.traces && file.otel.logs ? " and " : "")\(file.otel.logs ? "logs" : "") to \(file.otel.endpoint) (\(file.otel.wireProtocol.rawValue))")
        }
        if file.metrics.enabled {
            let registry = MetricsRegistry()
            // Anything in the process that reports through swift-metrics lands on the same page.
            MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry.prometheus))
            monitors.append(MetricsMonitor(registry: registry, settings: MetricsSettings(hostLabels: file.metrics.hostLabels)))
            let exporter = otelExporter
            adminEndpoints.append(MetricsEndpoint(registry: registry, version: Session.version, otelTotals: exporter.map { exporter in
                { @Sendable in
                    [("dropped", "traces", exporter.droppedSpans.load(ordering: .relaxed)),
                     ("dropped", "logs", exporter.droppedLogs.load(ordering: .relaxed)),
                     ("exported", "traces", exporter.exportedSpans.load(ordering: .relaxed)),
                     ("exported", "logs", exporter.exportedLogs.load(ordering: .relaxed))]
                }
            }))
        }
        if file.ui.enabled {
            let live = LiveMonitor(ringSize: file.ui.ringSize, keepLifecycle: file.log.enabled && file.log.verbose,
                                   revealSecrets: file.log.revealSecrets, includeHeaders: file.log.includeHeaders,
                                   sharesSummaryRecords: sharesRecords, sharedQueue: sharesRecords ? recordQueue : nil,
                                   heartbeatInterval: file.ui.heartbeat)
            monitors.append(live)
            adminEndpoints.append(LiveEndpoint(monitor: live, descriptorSets: file.grpcDescriptorSets.flatMap(\.bytes)))
            adminEndpoints.append(UIEndpoint())
        }
        let configuration = try SessionConfiguration(file, logger: logger)
        if let store = configuration.passthrough { adminEndpoints.append(PassthroughStatus(store: store)) }
        session = try Session(configuration: configuration, monitors: monitors, adminEndpoints: adminEndpoints, logger: logger)
        if let path {
            let reloader = ConfigReloader(path: path, session: session, logger: logger, watch: file.configWatch)
            self.reloader = reloader
            session.reloader.withLock { $0 = { trigger in reloader.reload(trigger: trigger) } }
        }
    }

    func start() throws {
        signal(SIGPIPE, SIG_IGN)
        // Handlers first: a signal sent as soon as "listening" is printed must not be lost.
        watch(SIGTERM) { [unowned self] in stop(signal: "SIGTERM") }
        watch(SIGINT) { [unowned self] in stop(signal: "SIGINT") }
        watch(SIGHUP) { [unowned self] in
            logger.info("SIGHUP: reopening the log file")
            logMonitor?.reopen()
            if let outcome = session.reloadRecordings() { logger.info("SIGHUP: \(outcome)") }
            // Off the signal queue: a reload waits for its own queue.
            if let reloader { DispatchQueue.global().async { _ = reloader.reload(trigger: "SIGHUP") } }
        }
        // Registration is asynchronous, on Dispatch's manager thread; `dispatchMain` then unblocks
        // the signals on the main thread, where one arriving before Dispatch's handler is in
        // place would kill the process. So nothing is announced until all three are registered.
        for _ in ProxyRunner.controlSignals {
            if signalsRegistered.wait(timeout: .now() + 5) == .timedOut {
                logger.warning("signal handlers not registered within 5 s; a signal right now may be lost")
                break
            }
        }
        let addresses = try session.start()
        for address in addresses {
            logger.info("listening on \(address)")
        }
    }

    static let controlSignals = [SIGTERM, SIGINT, SIGHUP]

    /// Blocks the control signals in the calling thread, and so in every thread started after it.
    /// Dispatch receives signals through a signalfd that is registered asynchronously; a blocked
    /// signal stays pending until then, where an ignored one would be lost and a default one would
    /// kill the process. Call first thing, before any thread exists.
    static func blockControlSignals() {
        var set = sigset_t()
        sigemptyset(&set)
        for number in controlSignals { sigaddset(&set, number) }
        pthread_sigmask(SIG_BLOCK, &set, nil)
    }

    private func watch(_ number: Int32, _ handler: @escaping () -> Void) {
        let source = DispatchSource.makeSignalSource(signal: number, queue: signalQueue)
        source.setEventHandler(handler: handler)
        let registered = signalsRegistered
        source.setRegistrationHandler { registered.signal() }
        source.activate()
        signalSources.append(source)
    }

    private func stop(signal name: String) {
        if stopping {
            logger.warning("\(name) again: exiting now")
            session.shutdownNow()
            exit(130)
        }
        stopping = true
        logger.info("\(name): finishing in-flight exchanges (up to \(session.configuration.timeouts.shutdownGrace) s)")
        let logMonitor = self.logMonitor
        let otelExporter = self.otelExporter
        let logger = self.logger
        session.shutdown {
            logMonitor?.flush()
            // The last spans and records go out within otel.timeout_ms.
            otelExporter?.flush()
            logger.info("stopped")
            exit(0)
        }
    }
}
