"""Adapters at the edge: other ecosystems' tools and front ends as toolwire toolsets.

`toolwire.interop.mcp` offers an MCP server's tools (the `mcp` extra). Nothing here is imported
by `import toolwire`.
"""
