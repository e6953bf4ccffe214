/**
 * Toolvisor LSP: language servers as supervised toolsets of `lsp_*` agent tools.
 *
 * Modules under `src/internal/` (the session's documents, requests, edits, rendering…) are not
 * part of this API and may change in any release.
 */
export * as LspConnector from "./LspConnector.ts"
export * as LspRouter from "./LspRouter.ts"
export * as LspSpec from "./LspSpec.ts"
export * as LspTools from "./LspTools.ts"
export * as LspToolset from "./LspToolset.ts"
