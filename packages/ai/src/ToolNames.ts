/**
 * The names a model sees. The catalog's names are used as they are whenever a provider accepts
 * them; a name that breaks the rule most providers share (OpenAI, Anthropic, Gemini: letters,
 * digits, `_` and `-`, at most 64 characters) gets a safe form that ends in a hash of the
 * original, so the mapping is the same in every process and every turn, and maps back exactly.
 */

import { type Catalog, Deferral } from "@toolvisor/runtime"

/** The longest name every major provider accepts. */
export const maxLength = 64

const allowed = /^[a-zA-Z0-9_-]+$/

/** Whether a provider takes `name` as it is. */
export const isSafe = (name: string): boolean => name.length > 0 && name.length <= maxLength && allowed.test(name)

/** FNV-1a, 32 bits, as 8 hex digits: short, stable across processes, no crypto needed. */
const hash = (text: string): string => {
  let h = 0x811c9dc5
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i)
    h = Math.imul(h, 0x01000193)
  }
  return (h >>> 0).toString(16).padStart(8, "0")
}

/** The safe form of one unsafe name: its characters cleaned, cut to fit, and its hash appended. */
const rewrite = (name: string): string => {
  const suffix = `_${hash(name)}`
  const cleaned = name.replace(/[^a-zA-Z0-9_-]/g, "_").slice(0, maxLength - suffix.length)
  return `${cleaned}${suffix}`
}

/** Both directions of the mapping for one catalog. */
export interface ToolNames {
  /** The catalog name → the name the model sees. */
  readonly toModel: ReadonlyMap<string, string>
  /** The name the model sees → the catalog name. */
  readonly fromModel: ReadonlyMap<string, string>
}

/**
 * Maps every catalog name to a name a provider accepts. Safe names stay as they are, except one
 * that equals another name's rewritten form: that form belongs to the name it was made from, so
 * a server cannot take another tool's calls by offering the name the model was shown for it
 * (`mail_send____adf7e7ec`), and the model's name for a tool does not move when others come. The
 * safe name is rewritten in turn; a clash that is left is resolved by hashing again, in catalog order.
 * `reserved` names are the adapter's own (`search_tools`): a tool of that name is rewritten too.
 */
export const make = (names: Iterable<string>, reserved: Iterable<string> = []): ToolNames => {
  const toModel = new Map<string, string>()
  const fromModel = new Map<string, string>()
  const all = [...names]
  const unsafe = all.filter((name) => !isSafe(name))
  const claimed = new Set([...unsafe.map(rewrite), ...reserved])
  const forged: Array<string> = []
  for (const name of all) {
    if (!isSafe(name)) continue
    if (claimed.has(name)) {
      forged.push(name)
      continue
    }
    toModel.set(name, name)
    fromModel.set(name, name)
  }
  for (const name of [...unsafe, ...forged]) {
    let candidate = rewrite(name)
    while (fromModel.has(candidate)) candidate = rewrite(candidate)
    toModel.set(name, candidate)
    fromModel.set(candidate, name)
  }
  return { toModel, fromModel }
}

/**
 * The names of a catalog's tools: when it defers tools the model is offered the adapter's own
 * `search_tools`, so a server's tool of that name is offered under a rewritten name, not hidden.
 */
export const ofCatalog = (catalog: Catalog.Catalog): ToolNames =>
  make(
    catalog.tools.map((entry) => entry.name),
    Deferral.hasDeferred(catalog) ? [Deferral.name] : []
  )
