"""Language servers: the compiler's view after every edit, and definitions and references for the model.

- `rpc`: JSON-RPC over a server's stdin/stdout, bounded (header and body sizes, JSON depth, a request's wait);
  the protocol's types are lsprotocol's (built with its converter, answers structured by it).
- `servers`: the built-in servers per language, and where each is found: the user's own setup (PATH, outside
  every folder a sandboxed command may write) or the project's (`node_modules/.bin`, `.venv/bin`), which is
  workspace-controlled code: used only in a trusted folder, pinned by digest in the trust question.
- `process`: every server runs in the session's sandbox (bwrap, landlock; none only for the user's own
  servers), under the launcher that ends its process group with kimi; stderr is kept to its last 16 KB.
- `client`: one running server: start, documents, and diagnostics by the quickest exact route it offers (a
  pull request, a versioned push, tsserver's own request through typescript-language-server).
- `diagnostics`: one diagnostic, what an edit introduced or fixed, the bounded lines the model reads.
- `manager`: the session's servers, started lazily when a file of their language is first read or edited;
  the post-call hook the agent calls and the service behind the Diagnostics, Definition and References tools.

Nothing here is imported at start-up: the runtime imports `manager` when it builds the first agent, and the
protocol types load on a worker thread when the first server starts.
"""
