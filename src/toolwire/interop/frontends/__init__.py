"""What toolwire's front-end endpoints share (`/agui`, `/ai-sdk/chat`; docs/frontends.md).

- `answers`: `Answer` (a front-end tool's result), `Reconciled` (what a request adds), `HistoryConflict`.
- `live_runs`: `LiveRun`, a run that lives across requests while a front-end tool call waits.
- `endpoint_base`: `FrontEndEndpoint`, authentication, threads, the messages rule and the stream's life.

These modules need starlette (the server's dependencies), not a protocol package; `import toolwire`
loads none of them.
"""
