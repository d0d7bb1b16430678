import Foundation
import Hummingbird
import Logging
import WidgetHost

/// The page `lunette dev` serves on 127.0.0.1: the dev session's state,
/// pushed to the browser as server-sent events after every change (a
/// version tried, a reload, a tap, a clock step), so the page updates
/// without a refresh.
///
/// Routes: `GET /` the page; `GET /state` the snapshot as JSON; `GET
/// /events` the snapshots as server-sent events (one at once, then one per
/// change); `POST /tap?kind=K` taps a control; `POST /clock?by=SECONDS` or
/// `POST /clock?next=1` steps the clock (by seconds, or to the next thing
/// due) and runs what is due.
public enum DevPageServer {
    /// Serves the page until the task is cancelled. `port` 0 takes a free
    /// one; `onRunning` gets the port in use once the server listens.
    public static func run(session: DevSession, port: Int, onRunning: @escaping @Sendable (Int) -> Void) async throws {
        let router = Router()
        router.get("/") { _, _ -> Response in
            Response(status: .ok, headers: [.contentType: "text/html; charset=utf-8", .cacheControl: "no-store"],
                     body: .init(byteBuffer: ByteBuffer(string: DevPageHTML.page)))
        }
        router.get("/state") { _, _ -> Response in
            json(await session.snapshot())
        }
        router.get("/events") { _, _ -> Response in
            let changes = await session.subscribe()
            return Response(status: .ok, headers: [.contentType: "text/event-stream", .cacheControl: "no-store"],
                            body: .init { writer in
                                var sent: Int?
                                for await generation in changes {
                                    // The same generation again is a heartbeat: a comment line
                                    // (a page that went makes this write fail, which ends the loop).
                                    if generation == sent {
                                        try await writer.write(ByteBuffer(string: ": alive\n\n"))
                                        continue
                                    }
                                    sent = generation
                                    try await writer.write(ByteBuffer(string: "data: " + encode(await session.snapshot()) + "\n\n"))
                                }
                                try await writer.finish(nil)
                            })
        }
        router.post("/tap") { request, _ -> Response in
            if let refused = foreign(request) { return refused }
            guard let kind = request.uri.queryParameters.get("kind") else { return problem(.badRequest, "POST /tap needs ?kind=CONTROL") }
            do { try await session.tap(control: kind) } catch { return problem(.badRequest, "\(error)") }
            return json(await session.snapshot())
        }
        router.post("/clock") { request, _ -> Response in
            if let refused = foreign(request) { return refused }
            let by = request.uri.queryParameters.get("by").flatMap(Double.init)
            guard by != nil || request.uri.queryParameters.get("next") != nil else {
                return problem(.badRequest, "POST /clock needs ?by=SECONDS or ?next=1")
            }
            do { try await session.step(by: by) } catch { return problem(.badRequest, "\(error)") }
            return json(await session.snapshot())
        }
        // The server's own log says only what is critical: stopping it with
        // pages still connected is normal here, not an error to print.
        var logger = Logger(label: "lunette.dev.page")
        logger.logLevel = .critical
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: port), serverName: "lunette dev"),
                              onServerRunning: { channel in onRunning(channel.localAddress?.port ?? port) }, logger: logger)
        try await app.runService(gracefulShutdownSignals: [])
    }

    private static func json(_ snapshot: DevSnapshot) -> Response {
        Response(status: .ok, headers: [.contentType: "application/json", .cacheControl: "no-store"],
                 body: .init(byteBuffer: ByteBuffer(string: encode(snapshot))))
    }

    /// The snapshot as JSON. Numbers that JSON cannot hold (a script's
    /// 0/0, math.huge) are the strings "NaN", "Infinity", "-Infinity".
    public static func encode(_ snapshot: DevSnapshot) -> String {
        let encoder = JSONEncoder()
        encoder.nonConformingFloatEncodingStrategy = .convertToString(positiveInfinity: "Infinity", negativeInfinity: "-Infinity", nan: "NaN")
        do {
            return String(decoding: try encoder.encode(snapshot), as: UTF8.self)
        } catch {
            var fallback = snapshot
            fallback.widgets = []
            fallback.controls = []
            fallback.activities = []
            fallback.logs = []
            fallback.failure = [DevSnapshot.Problem(text: "the page cannot show this state: \(error)")]
            return (try? encoder.encode(fallback)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
        }
    }

    /// A POST from another site (a page the developer visits that posts to
    /// 127.0.0.1) is refused: only the dev page itself may tap and step.
    private static func foreign(_ request: Request) -> Response? {
        guard let origin = request.headers[.origin] else { return nil }   // curl, scripts
        guard let host = request.head.authority, origin == "http://" + host else {
            return problem(.forbidden, "POST from \(origin) refused: only the dev page may tap controls or step the clock")
        }
        return nil
    }

    private static func problem(_ status: HTTPResponse.Status, _ message: String) -> Response {
        Response(status: status, headers: [.contentType: "text/plain; charset=utf-8"], body: .init(byteBuffer: ByteBuffer(string: message + "\n")))
    }
}
