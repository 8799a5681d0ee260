"""AG-UI front ends (CopilotKit, `@ag-ui/client`) on `toolwire serve`: `POST /agui`, SSE (docs/frontends.md).

```
toolwire serve --app myapp:make_agent --agui     # POST /agui beside /ws, same tokens and store
```

- `event_map`: a run's events → AG-UI events (pure; `EventMapper`).
- `reconcile`: the `messages` a client sends, reconciled with the stored transcript (pure; `reconcile`).
- `live_runs`: a run that lives across requests while a front-end tool call waits for its result.
- `endpoint`: the HTTP endpoint (`mount_agui`): authentication, threads, the SSE stream.

Every module here needs the `agui` extra (`ag-ui-protocol`); `import toolwire` loads none of them.
"""
