"""The Vercel AI SDK's `useChat` on `toolwire serve`: `POST /ai-sdk/chat`, the UI message stream (docs/frontends.md).

```
toolwire serve --app myapp:make_agent --ai-sdk     # POST /ai-sdk/chat beside /ws, same tokens and store
```

- `parts`: a run's events → UI message stream parts (pure; `PartMapper`).
- `ui_messages`: a request's `UIMessage`s, reconciled with the stored transcript (pure; `reconcile`).
- `streams`: each thread's last message as its responses streamed it (`PartLogs`), for resumable streams.
- `chat_endpoint`: the HTTP endpoint (`mount_ai_sdk`: `POST`, and the `GET` that resumes a stream), on
  `..frontends` (live runs, auth, threads).

No package beyond the server's: the parts are plain JSON. `import toolwire` loads none of this.
"""
