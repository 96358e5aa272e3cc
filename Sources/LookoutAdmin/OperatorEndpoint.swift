import LookoutModel

/// The admin pages that act on traffic (the admin token guards them, as every page):
/// - `GET /exchanges?state=held`: the exchanges breakpoints hold, oldest first;
/// - `GET /exchanges/ID` for a held exchange: its held head and body (other exchanges: the live pages);
/// - `POST /exchanges/ID/resume` with optional edits, `/abort`, `/answer`: let a held one go;
/// - `POST /exchanges/ID/resend` with optional edits: send a finished one's request again;
/// - `GET /breakpoints`, `POST /breakpoints` with a rule, `DELETE /breakpoints/N`.
/// Bad input gets a 400 whose message starts with the field it is about; the exchange stays held.
public enum OperatorEndpoint {
    public static func answer(_ request: AdminRequest) -> AdminAnswer? {
        let path = request.path
        if path == "/breakpoints" || path.hasPrefix("/breakpoints/") { return breakpoints(request) }
        guard let session = request.breakpoints else { return nil }
        if path == "/exchanges", request.method == .get || request.method == .head,
           request.parameters["state"] == "held" {
            let now = Instant.now()
            let list = session.heldExchanges.map { OperatorJSON.held($0, now: now) }.joined(separator: ",")
            return json(200, "{\"exchanges\":[\(list)]}")
        }
        guard path.hasPrefix("/exchanges/") else { return nil }
        let parts = path.dropFirst("/exchanges/".count).split(separator: "/", omittingEmptySubsequences: false)
        guard let id = UInt64(parts[0]) else { return nil }
        if parts.count == 1, request.method == .get || request.method == .head {
            // Not held: the live pages answer with its record.
            return session.heldExchange(id: id).map { json(200, OperatorJSON.held($0, now: .now())) }
        }
        guard parts.count == 2, ["resume", "abort", "answer", "resend"].contains(parts[1]) else { return nil }
        guard request.method == .post else {
            return error(405, "", "\(path) answers POST only")
        }
        do {
            switch parts[1] {
            case "resume": return act(session, id, .resume(try OperatorJSON.edits(request.body)), request)
            case "abort": return act(session, id, .abort, request)
            case "answer": return act(session, id, .answer(try OperatorJSON.answer(request.body)), request)
            default: return resend(session, id, try OperatorJSON.edits(request.body), request)
            }
        } catch {
            return self.error(400, error.field, error.description)
        }
    }

    private static func act(_ session: any BreakpointOperator, _ id: UInt64, _ action: OperatorAction,
                            _ request: AdminRequest) -> AdminAnswer {
        if case .resume(let edits) = action, edits.status != nil,
           session.heldExchange(id: id)?.phase == "request" {
            return error(400, "status", "status: only a response can be given another status (this exchange is held at its request)")
        }
        let operatorAddress = request.clientAddress
        return AdminAnswer { reply in
            session.act(onHeld: id, action, operatorAddress: operatorAddress) { outcome in
                switch outcome {
                case .done:
                    reply(json(200, "{\"id\":\(id),\"action\":\(OperatorJSON.quoted(action.name)),"
                        + "\"by\":\(OperatorJSON.quoted(operatorAddress))}"))
                case .notHeld:
                    reply(error(404, "", "exchange \(id) is not held (GET /exchanges?state=held lists those that are)"))
                case .invalid(let message):
                    let field = message.split(separator: ":", maxSplits: 1).first.map(String.init) ?? ""
                    reply(error(400, field, message))
                }
            }
        }
    }

    private static func resend(_ session: any BreakpointOperator, _ id: UInt64, _ edits: ExchangeEdits,
                               _ request: AdminRequest) -> AdminAnswer {
        if edits.status != nil { return error(400, "status", "status: a resent request has no status to change") }
        let operatorAddress = request.clientAddress
        return AdminAnswer { reply in
            session.resend(id: id, edits: edits, operatorAddress: operatorAddress) { result in
                switch result {
                case .success(let newID):
                    reply(json(202, "{\"id\":\(newID),\"resent_from\":\(id),\"resent_by\":\(OperatorJSON.quoted(operatorAddress))}"))
                case .failure(let refusal):
                    let field = refusal.status == 400 ? refusal.message.split(separator: ":").first.map(String.init) ?? "" : ""
                    reply(error(refusal.status, field, refusal.message))
                }
            }
        }
    }

    private static func breakpoints(_ request: AdminRequest) -> AdminAnswer {
        guard let session = request.breakpoints else { return error(503, "", "no session to ask") }
        if request.path == "/breakpoints" {
            switch request.method {
            case .get, .head:
                let rules = session.breakpointRules.map { OperatorJSON.rule(id: $0.id, $0.spec) }.joined(separator: ",")
                return json(200, "{\"breakpoints\":[\(rules)],\"held\":\(session.heldExchanges.count)}")
            case .post:
                do {
                    let spec = try OperatorJSON.rule(request.body)
                    switch session.addBreakpoint(spec) {
                    case .success(let id): return json(201, OperatorJSON.rule(id: id, spec))
                    case .failure(let rejection):
                        return error(400, String(rejection.message.prefix { $0 != ":" }), rejection.message)
                    }
                } catch {
                    return self.error(400, error.field, error.description)
                }
            default:
                return error(405, "", "/breakpoints answers GET and POST (and DELETE /breakpoints/N)")
            }
        }
        let number = request.path.dropFirst("/breakpoints/".count)
        guard request.method == .delete else { return error(405, "", "/breakpoints/N answers DELETE only") }
        guard let id = Int(number), session.removeBreakpoint(id: id) else {
            return error(404, "", "no breakpoint \(number) (GET /breakpoints lists them)")
        }
        return json(200, "{\"deleted\":\(id)}")
    }

    private static func json(_ status: Int, _ text: String) -> AdminAnswer {
        AdminAnswer(status: status, contentType: "application/json", body: Array((text + "\n").utf8))
    }

    /// `{"error": message, "field": name}`: the message starts with the field it is about.
    private static func error(_ status: Int, _ field: String, _ message: String) -> AdminAnswer {
        let fieldPart = field.isEmpty ? "" : ",\"field\":\(OperatorJSON.quoted(field))"
        return json(status, "{\"error\":\(OperatorJSON.quoted(message))\(fieldPart)}")
    }
}
