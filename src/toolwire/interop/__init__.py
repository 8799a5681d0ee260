"""Adapters at the edge: other ecosystems' tools and front ends, on toolsets and the same store.

`toolwire.interop.mcp` offers an MCP server's tools as a toolset, `toolwire.interop.mcp_serve`
serves toolwire's tools over MCP (both need the `mcp` extra). Nothing here is imported by
`import toolwire`.
"""
