/**
 * What the server can do: the capabilities it advertised in `initialize`, plus the providers it
 * registered or unregistered later (`client/registerCapability`). The catalogue of tools is
 * derived from this, so a provider that appears or disappears at run time shows in it too.
 */
import type * as Protocol from "vscode-languageserver-protocol"

/** The `ServerCapabilities` keys that gate a tool (and pull diagnostics). */
export type Provider =
  | "hoverProvider"
  | "definitionProvider"
  | "referencesProvider"
  | "implementationProvider"
  | "documentSymbolProvider"
  | "workspaceSymbolProvider"
  | "codeActionProvider"
  | "renameProvider"
  | "documentFormattingProvider"
  | "callHierarchyProvider"
  | "typeHierarchyProvider"
  | "signatureHelpProvider"
  | "inlayHintProvider"
  | "diagnosticProvider"

/** The request method a dynamic registration names, for each provider. */
export const methods: { readonly [P in Provider]: string } = {
  hoverProvider: "textDocument/hover",
  definitionProvider: "textDocument/definition",
  referencesProvider: "textDocument/references",
  implementationProvider: "textDocument/implementation",
  documentSymbolProvider: "textDocument/documentSymbol",
  workspaceSymbolProvider: "workspace/symbol",
  codeActionProvider: "textDocument/codeAction",
  renameProvider: "textDocument/rename",
  documentFormattingProvider: "textDocument/formatting",
  callHierarchyProvider: "textDocument/prepareCallHierarchy",
  typeHierarchyProvider: "textDocument/prepareTypeHierarchy",
  signatureHelpProvider: "textDocument/signatureHelp",
  inlayHintProvider: "textDocument/inlayHint",
  diagnosticProvider: "textDocument/diagnostic"
}

/** `true` or an options object enables a provider; absent, `null` and `false` do not. */
export const isEnabled = (value: unknown): boolean =>
  value === true || (typeof value === "object" && value !== null && !Array.isArray(value))

export interface Capabilities {
  readonly advertised: Protocol.ServerCapabilities
  /** True when the server advertised the provider or registered its method since. */
  readonly supports: (provider: Provider) => boolean
  /** Applies registrations; true when the set of supported providers changed. */
  readonly register: (registrations: ReadonlyArray<Protocol.Registration>) => boolean
  readonly unregister: (unregistrations: ReadonlyArray<Protocol.Unregistration>) => boolean
  /** The methods registered dynamically and still in force, by registration id. */
  readonly registered: () => ReadonlyArray<{ readonly id: string; readonly method: string }>
}

/** Capability state for one session; a new session starts from its own `initialize` answer. */
export const make = (advertised: Protocol.ServerCapabilities): Capabilities => {
  const dynamic = new Map<string, string>()
  const providers = Object.keys(methods).filter((key): key is Provider => key in methods)
  const supports = (provider: Provider): boolean =>
    isEnabled(advertised[provider]) || [...dynamic.values()].includes(methods[provider])
  const snapshot = () => providers.filter(supports).join(",")
  const changing = (update: () => void): boolean => {
    const before = snapshot()
    update()
    return snapshot() !== before
  }
  return {
    advertised,
    supports,
    register: (registrations) =>
      changing(() => {
        for (const r of registrations) dynamic.set(r.id, r.method)
      }),
    unregister: (unregistrations) =>
      changing(() => {
        for (const u of unregistrations) dynamic.delete(u.id)
      }),
    registered: () => [...dynamic.entries()].map(([id, method]) => ({ id, method }))
  }
}

/** The advertised providers that are on, for `lsp_workspace`. */
export const enabledProviders = (capabilities: Capabilities): ReadonlyArray<string> =>
  Object.entries(capabilities.advertised)
    .filter(([key, value]) => key.endsWith("Provider") && isEnabled(value))
    .map(([key]) => key)
    .sort()
